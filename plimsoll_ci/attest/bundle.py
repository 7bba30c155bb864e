"""The bundle: JSON Lines of signed run records, hash-chained, ending in a signed checkpoint.

Line N (1-based, `\\n`-terminated, RFC 8785 canonical JSON; lines of v1 records, written before,
are in the v1 canonical form of `canonical.dumps_v1`, and a line's form must be its record's):

    record:     {"envelope": DSSE, "index": N, "kind": "record", "previous": H, "result": {...}}
    checkpoint: {"envelope": DSSE, "index": N, "kind": "checkpoint", "previous": H}

`H` is the digest of line N-1 (64 zeros for line 1), where a line's digest is
SHA-256(b"plimsoll-ci bundle-line v1\\x00" || the line's bytes without its newline). The record's
envelope signs an in-toto Statement whose subject is the SHA-256 of `result`; the checkpoint, always
and only the last line, signs the record count and the digest of the last record line. So editing,
deleting, reordering, duplicating or cutting lines is caught, and only a key holder can re-seal.

Appending takes an exclusive `fcntl` lock on `BUNDLE.lock`, checks the existing bundle under the
signer's key (a damaged or foreign bundle is never re-sealed), writes the whole new bundle to
`BUNDLE.unsealed`, fsyncs it, renames it over `BUNDLE` and fsyncs the folder. A crash before the
rename leaves the previous bundle untouched and, at most, a `BUNDLE.unsealed` file to delete.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical, dsse, eval_record, record
from plimsoll_ci.attest.keys import PublicKey, Signer
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import cannot_read, read_bounded

LINE_DOMAIN = b"plimsoll-ci bundle-line v1\x00"
GENESIS = "0" * 64
RECORD_KEYS = frozenset({"envelope", "index", "kind", "previous", "result"})
CHECKPOINT_KEYS = frozenset({"envelope", "index", "kind", "previous"})
# The canonical form each signed statement type is written in (eval attempts: RFC 8785).
_FORMS = {**record.FORM_OF_TYPE, eval_record.PREDICATE_TYPE: canonical.JCS}


def line_digest(line: bytes) -> str:
    """The domain-separated SHA-256 (hex) of one bundle line, without its newline."""
    return hashlib.sha256(LINE_DOMAIN + line).hexdigest()


class Problem(NamedTuple):
    """One reason a bundle does not verify, at a 1-based line number."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"bundle line {self.line}: {self.reason}"


class RecordSummary(NamedTuple):
    """What a verified record says, for the summary."""

    line: int
    course: str
    provider: str
    tier: str
    practice_set: str | None
    fresh_commitment: str | None
    result_sha256: str
    started: str = ""  # run.startedOn
    sealed_commitment: str | None = None  # a held-out set committed before the grading
    sealed_committed: str | None = None  # when that commitment was dated
    uncommitted: int = 0  # flights on seeds no commitment covered (a seed file)
    weak_allowed: bool = False  # graded with --allow-weak-seeds
    kind: str = "grading"  # or "eval-attempt" (`plimsoll-ci eval run`), "rebuild-session" (squeeze)


class Report(NamedTuple):
    """The outcome of verifying a bundle: every problem found, and the records that verified."""

    problems: list[Problem]
    records: list[RecordSummary]
    count: int  # type: ignore[assignment]  # shadows tuple.count, on purpose
    keyid: str

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


class _Inspected(NamedTuple):
    """What one line says on its own (phase 1, pure): the links are checked in order afterwards."""

    kind: str | None  # "record", "checkpoint", or None when the line is unreadable
    index: Any
    previous: Any
    problems: list[str]
    summary: RecordSummary | None
    sealed: tuple[int, str] | None  # a checkpoint's signed (count, head)


def _result_bytes(raw: bytes, doc: dict) -> bytes:
    # The line is canonical with keys sorted, so it ends `"previous":P,"result":R}` and R is the
    # result's canonical encoding (in both forms: a sub-document of a canonical document is written
    # exactly as it would be alone): slice it instead of encoding it again. Called only after the
    # envelope verified, and a valid envelope holds no `"previous":` (base64, hex and one constant).
    marker = b'"previous":' + canonical.dumps(doc["previous"]) + b',"result":'
    at = raw.find(marker)
    if at < 0:  # unreachable for a canonical record line; stay correct anyway
        return canonical.dumps(doc["result"])
    return raw[at + len(marker) : -1]


def _signed_statement(payload: bytes, line_forms: frozenset[str], types: tuple[str, ...],
                      problems: list[str], prefix: str) -> Any:
    """The statement in a verified payload, when it and its line are both in the canonical form
    its predicate type names (v2: RFC 8785; v1: the old form); None after noting why not."""
    try:
        statement, forms = canonical.parse(payload)
    except canonical.NotCanonical as e:
        problems.append(f"{prefix}signed statement: {e}")
        return None
    kind = statement.get("predicateType") if isinstance(statement, dict) else None
    form = _FORMS.get(kind) if kind in types else None
    if form is None:
        return statement  # the frame check names the wrong type
    if form not in forms:
        problems.append(f"{prefix}signed statement: not in the canonical form its type {kind} "
                        "is written in")
        return None
    if form not in line_forms:
        problems.append(f"{prefix}line not in the canonical form its type {kind} is written in")
        return None
    return statement


def _check_record(n: int, raw: bytes, doc: dict, forms: frozenset[str],
                  public: PublicKey) -> _Inspected:
    problems: list[str] = []

    def done(summary: RecordSummary | None = None) -> _Inspected:
        return _Inspected("record", doc["index"], doc["previous"], problems, summary, None)

    opened = dsse.open_envelope(doc["envelope"], public)
    problems.extend(opened.problems)
    if opened.payload is None:
        return done()
    types = record.PREDICATE_TYPES
    others = (eval_record.PREDICATE_TYPE, record.SESSION_PREDICATE_TYPE)
    statement = _signed_statement(opened.payload, forms, (*types, *others), problems, "")
    if statement is None:
        return done()
    kind = statement.get("predicateType") if isinstance(statement, dict) else None
    if kind == eval_record.PREDICATE_TYPE:
        return done(_check_eval_attempt(n, raw, doc, statement, problems))
    if kind == record.SESSION_PREDICATE_TYPE:
        return done(_check_session(n, raw, doc, statement, problems))
    subject, frame = record.statement_subject(statement, types, record.RESULT_NAME)
    problems.extend(frame)
    if subject is None:
        return done()
    predicate, kind = statement["predicate"], statement["predicateType"]
    shape = record.check_predicate(predicate, kind)
    problems.extend(f"predicate: {reason}" for reason in shape)
    if shape:
        return done()
    if hashlib.sha256(_result_bytes(raw, doc)).hexdigest() != subject:
        problems.append("stored result does not match the signed result digest")
    if predicate["result"]["sha256"] != subject:
        problems.append("predicate result digest does not match the statement subject")
    problems.extend(record.check_seed_sets(predicate, kind))
    inputs, sandbox = predicate["inputs"], predicate["sandbox"]
    sealed = inputs.get("sealedSet")
    check = predicate.get("seedCheck") or {}
    return done(RecordSummary(
        line=n,
        course=inputs["course"],
        provider=sandbox["provider"],
        tier=sandbox["tier"],
        practice_set=None if inputs["practiceSet"] is None else inputs["practiceSet"]["sha256"],
        fresh_commitment=None if inputs["freshSet"] is None else inputs["freshSet"]["commitment"],
        result_sha256=subject,
        started=predicate["run"]["startedOn"],
        sealed_commitment=None if sealed is None else sealed["commitment"],
        sealed_committed=None if sealed is None else sealed["committedOn"],
        uncommitted=check.get("uncommitted", 0),
        weak_allowed=check.get("allowWeak", False),
    ))


class _Kind(NamedTuple):
    """A kind of record other than a grading run: its predicate type, its subject's name, and
    the check of its predicate's shape (problems, none when it is well formed)."""

    predicate_type: str
    name: str
    check: Callable[[Any], list[str]]


def _other_predicate(raw: bytes, doc: dict, statement: dict, problems: list[str],
                     kind: _Kind) -> tuple[dict, str] | None:
    """A record of another kind than a grading run (an eval attempt, a rebuild session): its
    frame, its predicate's shape (by `kind.check`) and its stored result; (predicate, subject),
    or None after noting why not."""
    subject, frame = record.statement_subject(statement, kind.predicate_type, kind.name)
    problems.extend(frame)
    if subject is None:
        return None
    predicate = statement["predicate"]
    shape = kind.check(predicate)
    problems.extend(f"predicate: {reason}" for reason in shape)
    if shape:
        return None
    if hashlib.sha256(_result_bytes(raw, doc)).hexdigest() != subject:
        problems.append("stored result does not match the signed result digest")
    if predicate["result"]["sha256"] != subject:
        problems.append("predicate result digest does not match the statement subject")
    return predicate, subject


def _check_eval_attempt(n: int, raw: bytes, doc: dict, statement: dict,
                        problems: list[str]) -> RecordSummary | None:
    """An eval-attempt record's frame, predicate and stored result (problems noted)."""
    found = _other_predicate(raw, doc, statement, problems, _Kind(
        eval_record.PREDICATE_TYPE, eval_record.RESULT_NAME, eval_record.check_predicate))
    if found is None:
        return None
    sandbox = found[0]["sandbox"]
    return RecordSummary(line=n, course="", provider=sandbox["provider"], tier=sandbox["tier"],
                         practice_set=None, fresh_commitment=None, result_sha256=found[1],
                         kind="eval-attempt")


def _check_session(n: int, raw: bytes, doc: dict, statement: dict,
                   problems: list[str]) -> RecordSummary | None:
    """A rebuild-session record's frame, predicate and stored result (problems noted)."""
    found = _other_predicate(raw, doc, statement, problems, _Kind(
        record.SESSION_PREDICATE_TYPE, record.SESSION_NAME, record.check_session_predicate))
    if found is None:
        return None
    return RecordSummary(line=n, course="", provider="", tier="", practice_set=None,
                         fresh_commitment=None, result_sha256=found[1], kind="rebuild-session")


def _check_checkpoint(doc: dict, forms: frozenset[str], public: PublicKey) -> _Inspected:
    problems: list[str] = []

    def done(sealed: tuple[int, str] | None = None) -> _Inspected:
        return _Inspected("checkpoint", doc["index"], doc["previous"], problems, None, sealed)

    opened = dsse.open_envelope(doc["envelope"], public)
    problems.extend(f"checkpoint: {reason}" for reason in opened.problems)
    if opened.payload is None:
        return done()
    types = (record.CHECKPOINT_TYPE, record.CHECKPOINT_TYPE_V1)
    statement = _signed_statement(opened.payload, forms, types, problems, "checkpoint: ")
    if statement is None:
        return done()
    subject, frame = record.statement_subject(statement, types, record.CHECKPOINT_SUBJECT)
    problems.extend(f"checkpoint: {reason}" for reason in frame)
    if subject is None:
        return done()
    pred = statement["predicate"]
    if not isinstance(pred, dict) or set(pred) != {"count"} or type(pred["count"]) is not int:
        problems.append('checkpoint: predicate must be exactly {"count": N}')
        return done()
    return done((pred["count"], subject))


def _inspect(n: int, raw: bytes, public: PublicKey) -> _Inspected:
    """Everything about line `n` that does not depend on other lines."""
    try:
        doc, forms = canonical.parse(raw)
    except canonical.NotCanonical as e:
        return _Inspected(None, None, None, [f"not a bundle line: {e}"], None, None)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind == "record" and set(doc) == RECORD_KEYS:
        return _check_record(n, raw, doc, forms, public)
    if kind == "checkpoint" and set(doc) == CHECKPOINT_KEYS:
        return _check_checkpoint(doc, forms, public)
    reason = 'not a bundle line: needs "kind" record or checkpoint and its fields'
    return _Inspected(None, None, None, [reason], None, None)


def _inspect_chunk(first: int, raws: list[bytes], public_der: bytes) -> list[_Inspected]:
    from plimsoll_ci.attest.keys import public_key_from_der

    public = public_key_from_der(public_der)
    return [_inspect(first + i, raw, public) for i, raw in enumerate(raws)]


def _inspect_all(lines: list[bytes], public: PublicKey, workers: int) -> list[_Inspected]:
    # Serial by default: on a shared 2-core machine the workers' start-up and pickling cost more
    # than they save (see benchmarks/bench_verify.py). Workers are the forked ones of `pool`
    # (no re-import of `__main__`; in this process when forking is not safe here).
    if workers <= 1 or len(lines) < 2:
        return [_inspect(n, raw, public) for n, raw in enumerate(lines, 1)]
    from plimsoll_ci import pool

    size = -(-len(lines) // (workers * 4))
    der = public.der()
    calls = [(s + 1, lines[s : s + size], der) for s in range(0, len(lines), size)]
    return [item for chunk in pool.run(_inspect_chunk, calls, workers) for item in chunk]


def verify_bytes(
    data: bytes, public: PublicKey, expect_count: int | None = None, workers: int = 1
) -> Report:
    """Verify a bundle's bytes under `public`; every problem, each with its line number.

    `workers`: processes for the per-line checks (1: in this process; more only pays on idle CPUs).
    """
    problems: list[Problem] = []
    records: list[RecordSummary] = []
    if not data:
        return Report([Problem(1, "empty bundle: no records and no checkpoint")], [], 0, public.keyid)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    else:
        problems.append(Problem(len(lines), "line does not end with a newline (bundle cut short?)"))
    inspected = _inspect_all(lines, public, workers)
    previous = GENESIS
    offset = 0  # index - line number; reported only where it changes, so one gap is one problem
    sealed = 0  # line number of the first checkpoint
    for n, (raw, seen) in enumerate(zip(lines, inspected, strict=True), 1):
        problems.extend(Problem(n, reason) for reason in seen.problems)
        digest = line_digest(raw)
        if seen.kind is None:
            previous = digest
            continue
        if type(seen.index) is not int:
            problems.append(Problem(n, "index is not an integer"))
        elif seen.index - n != offset:
            problems.append(
                Problem(n, f"index {seen.index} does not follow the line before (a line is "
                        "missing, duplicated or out of order)")
            )
            offset = seen.index - n
        if seen.previous != previous:
            what = "the start of the bundle" if n == 1 else f"line {n - 1}"
            problems.append(Problem(n, f"previous digest does not match {what}"))
        if sealed:
            problems.append(Problem(n, f"line after the checkpoint on line {sealed}"))
        if seen.summary is not None:
            records.append(seen.summary)
        if seen.kind == "checkpoint":
            sealed = sealed or n
            if seen.sealed is not None:
                count, head = seen.sealed
                if count < 1:
                    problems.append(Problem(n, "checkpoint: seals no records (a bundle holds at "
                                            "least one)"))
                elif count != n - 1:
                    problems.append(Problem(n, f"checkpoint: seals {count} records but {n - 1} "
                                            "lines precede it (lines added or removed)"))
                if seen.index != count + 1:
                    problems.append(Problem(n, f"checkpoint: index {seen.index} is not the "
                                            "sealed count + 1"))
                if head != previous:
                    problems.append(Problem(n, "checkpoint: sealed head digest does not match "
                                            "the line before it (a record changed or is missing)"))
        previous = digest
    last_is_checkpoint = bool(inspected) and inspected[-1].kind == "checkpoint"
    if not last_is_checkpoint:
        problems.append(
            Problem(len(lines), "the bundle ends here without a signed checkpoint (cut short, "
                    "or never sealed)")
        )
    count = len(lines) - 1 if last_is_checkpoint else len(lines)
    if expect_count is not None and count != expect_count:
        problems.append(Problem(len(lines), f"expected {expect_count} records, the bundle has {count}"))
    problems.sort(key=lambda p: p.line)  # stable: reasons on one line keep their order
    return Report(problems, records, count, public.keyid)


def verify_bundle(
    bundle_path: str | os.PathLike[str],
    public: PublicKey,
    expect_count: int | None = None,
    workers: int = 1,
) -> Report:
    """Read and verify the bundle at `bundle_path`, plain or gzip-compressed (`.jsonl.gz`, known
    by its magic bytes); BadInput when it cannot be read."""
    return verify_bytes(read_bundle(bundle_path), public, expect_count, workers)


MAX_BUNDLE_BYTES = 1 << 30  # 1 GiB, read or decompressed; 10,000 records take about 30 MB


def read_bundle(bundle_path: str | os.PathLike[str], follow: bool = True) -> bytes:
    """A bundle's bytes, at most `MAX_BUNDLE_BYTES`; a gzip file (as published beside reports)
    is decompressed, within the same bound. Refused (BadInput naming the file and the bound): a
    bigger file, a device, FIFO or socket (`/dev/zero` is never read), with `follow=False` a
    link, and a gzip stream that does not decompress."""
    path = Path(bundle_path)
    return unpack(read_bounded(path, MAX_BUNDLE_BYTES, f"bundle {path}", follow), path)


def unpack(raw: bytes, path: str | os.PathLike[str]) -> bytes:
    """`raw` itself, or when it is gzip (by its magic bytes) its stream decompressed, within
    `MAX_BUNDLE_BYTES`; BadInput naming `path` otherwise."""
    import gzip
    import io
    import zlib

    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            data = gz.read(MAX_BUNDLE_BYTES + 1)
    except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as e:
        raise BadInput(f"bundle {path}: a gzip file that does not decompress ({e}); "
                       "publish it again or verify the uncompressed bundle") from None
    if len(data) > MAX_BUNDLE_BYTES:
        raise BadInput(f"bundle {path}: decompresses to more than the bound of "
                       f"{MAX_BUNDLE_BYTES >> 20} MiB; refusing to read further")
    return data


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def unsealed_path(bundle_path: str | os.PathLike[str]) -> Path:
    """Where an append writes before the rename; left behind only by a crash."""
    path = Path(bundle_path)
    return path.with_name(path.name + ".unsealed")


def lock_path(bundle_path: str | os.PathLike[str]) -> Path:
    """The lock file appenders of `bundle_path` share."""
    path = Path(bundle_path)
    return path.with_name(path.name + ".lock")


def _replace_atomically(path: Path, content: bytes, mode: int) -> None:
    temp = unsealed_path(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # left by a crash; never write through whatever sits at that name
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    _fsync_dir(path.parent)


def _record_line(index: int, previous: str, result_doc: Any, predicate: Any, signer: Signer,
                 predicate_type: str = record.PREDICATE_TYPE) -> bytes:
    if predicate_type == eval_record.PREDICATE_TYPE:
        problems = eval_record.check_predicate(predicate)
        if problems:
            raise BadInput(f"eval attempt record {index}: {problems[0]}")
        statement = eval_record.make_statement(result_doc, predicate)
    elif predicate_type == record.SESSION_PREDICATE_TYPE:
        problems = record.check_session_predicate(predicate)
        if problems:
            raise BadInput(f"session record {index}: {problems[0]}")
        statement = record.make_session_statement(result_doc, predicate)
    elif predicate_type != record.PREDICATE_TYPE:
        raise BadInput(f"run record {index}: cannot write predicate type {predicate_type}")
    else:
        statement = _grading_statement(index, result_doc, predicate)
    envelope = dsse.sign(canonical.dumps(statement), signer)
    doc = {"envelope": envelope, "index": index, "kind": "record", "previous": previous,
           "result": result_doc}
    return canonical.dumps(doc)


def _grading_statement(index: int, result_doc: Any, predicate: Any) -> dict[str, Any]:
    problems = record.check_predicate(predicate)
    if problems:
        raise BadInput(f"run record {index}: {problems[0]}")
    problems = record.check_seed_sets(predicate)
    if problems:
        raise BadInput(f"run record {index}: {problems[0]}; refusing to sign")
    return record.make_statement(result_doc, predicate)


def _checkpoint_line(count: int, head: str, signer: Signer) -> bytes:
    envelope = dsse.sign(canonical.dumps(record.make_checkpoint(count, head)), signer)
    doc = {"envelope": envelope, "index": count + 1, "kind": "checkpoint", "previous": head}
    return canonical.dumps(doc)


def append_runs(
    bundle_path: str | os.PathLike[str], runs: Sequence[tuple[Any, Any]], signer: Signer,
    predicate_type: str = record.PREDICATE_TYPE,
) -> int:
    """Append signed records for `runs` (pairs of result document, predicate); the new count.

    `predicate_type` is what every predicate of `runs` is: a grading run (the default), an eval
    attempt (`eval_record.PREDICATE_TYPE`) or a rebuild session (`record.SESSION_PREDICATE_TYPE`).

    Creates the bundle when it does not exist. Refuses (BadInput) a bundle that does not verify
    under `signer`'s public key, so a damaged or foreign bundle is never re-sealed.
    """
    path = Path(bundle_path)
    if not runs:
        raise BadInput(f"bundle {path}: nothing to append")
    if not path.parent.is_dir():
        raise BadInput(f"bundle {path}: folder {path.parent} does not exist; create it first")
    with _locked(lock_path(path)):
        mode = 0o644
        try:
            old = path.read_bytes()
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            old = None
        except OSError as e:
            raise BadInput(f"bundle {path}: {cannot_read(e)}") from None
        if old is None:
            body, count, head = b"", 0, GENESIS
        else:
            report = verify_bytes(old, signer.public)
            if not report.ok:
                shown = "; ".join(str(p) for p in report.problems[:3])
                raise BadInput(
                    f"bundle {path}: does not verify under this run's key ({shown}); refusing to "
                    "append. Use the key that started it, or a new bundle path"
                )
            cut = old.rstrip(b"\n").rfind(b"\n") + 1  # start of the checkpoint line
            body, count = old[:cut], report.count
            head = line_digest(old[: cut - 1].rsplit(b"\n", 1)[-1])
        new_lines = []
        for result_doc, predicate in runs:
            count += 1
            line = _record_line(count, head, result_doc, predicate, signer, predicate_type)
            new_lines.append(line)
            head = line_digest(line)
        new_lines.append(_checkpoint_line(count, head, signer))
        _replace_atomically(path, body + b"\n".join(new_lines) + b"\n", mode)
    return count


def append_run(
    bundle_path: str | os.PathLike[str], result_doc: Any, predicate: Any, signer: Signer
) -> int:
    """Append one signed run record to the bundle (created if missing); the new record count."""
    return append_runs(bundle_path, [(result_doc, predicate)], signer)


def summarize(report: Report) -> dict[str, Any]:
    """A JSON-ready summary of a verified bundle: counts by tier, provider, course and set; each
    sealed set with when it was committed and when each of its gradings started."""
    commitments = [r.fresh_commitment for r in report.records if r.fresh_commitment is not None]
    sealed: dict[str, dict[str, Any]] = {}
    for r in report.records:
        if r.sealed_commitment is not None:
            entry = sealed.setdefault(r.sealed_commitment, {
                "commitment": r.sealed_commitment, "committed": r.sealed_committed,
                "graded": [], "records": []})
            entry["graded"].append(r.started)
            entry["records"].append(r.line)
    return {
        "records": report.count,
        "keyid": report.keyid,
        "kinds": dict(Counter(r.kind for r in report.records)),
        "tiers": dict(Counter(r.tier for r in report.records if r.tier)),
        "providers": dict(Counter(r.provider for r in report.records if r.provider)),
        "courses": dict(Counter(r.course for r in report.records if r.kind == "grading")),
        "practice_sets": sorted({r.practice_set for r in report.records if r.practice_set}),
        # a set is counted once however many records flew it (a squeeze flies one set in all)
        "fresh_sets": {"committed": len(set(commitments)),
                       "revealed_and_matching": len(set(commitments)),
                       "distinct": len(set(commitments)), "records": len(commitments)},
        "sealed_sets": sorted(sealed.values(), key=lambda e: (e["committed"], e["commitment"])),
        "uncommitted": {"records": [r.line for r in report.records if r.uncommitted],
                        "flights": sum(r.uncommitted for r in report.records)},
        "weak_seeds_allowed": [r.line for r in report.records if r.weak_allowed],
    }
