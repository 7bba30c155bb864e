"""`bundle merge`: the shards of one plan into the folder one runner would have written.

    merged = merge(MergeOptions([Path("s1"), Path("s2")], Path("out"), trusted=pin(["job.pub"])))

A merge trusts only the keys it is given (`--pub FILE`, `MergeOptions.trusted`), never a key found
beside the records it checks: a shard's own `harness.pub` is never read, so a shard re-signed
under another key (its `harness.pub` replaced to match) is refused, naming the key.

Each shard folder (`squeeze run JOB --plan PLAN --shard I/N --out DIR`) is checked on its own
first, every problem at once, each naming its folder:

- it holds only what a shard writes (`SHARD_FILES`), each a regular file: a link, a device, a
  FIFO, a folder or any other file is refused; every read is bounded (`MAX_BUNDLE_BYTES`,
  `MAX_RUN_BYTES`);
- its bundle verifies under a pinned key (signatures, chain, checkpoint);
- its `run.json` says it finished (`done`) and which slice it graded (I of N);
- every record is a grading of the plan its records name, and the records are exactly slice I of
  N of that plan (`plan.shard`), none twice.

Then across shards: one job section (the same commitment, the same plan), one N, every slice
1..N exactly once (none missing, none twice); with `--plan`, the plan's job section. Any problem:
exit 2 and nothing written.

The merged folder is built beside `--out` and renamed into place when whole: the shards' records
signed again, in plan order, under the merge's key (`harness.pub`; after the plan's session
records, verified under a pinned key too, for a job that builds: `--plan`), then every artifact
derived from that bundle by the road `squeeze run` takes, so `result.json` is byte for byte what
one runner writes. The plan's `built/` and `requests/` are copied file by file, only the regular
files its signed session records name (`planfile.copy_outputs`). Each shard's original bundle
and the pinned key that verified it are kept under `shards/I/`, and `squeeze verify` checks that
the merged records are exactly theirs (`check_provenance`), under keys it is given
(`--shard-pub`) or, without them, says that it proved consistency only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical
from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze import account as acct
from plimsoll_ci.squeeze import artifacts
from plimsoll_ci.squeeze import plan as plan_mod
from plimsoll_ci.squeeze.records import SignedRun, signed_runs

SHARDS = "shards"  # in a merged folder: shards/I/{bundle.intoto.jsonl,harness.pub}
MERGE_FORMAT = "plimsoll-squeeze-merge/1"
MAX_RUN_BYTES = 16 << 20  # a shard's run.json (its account): a few KiB per grading
# What `squeeze run --shard` writes; anything else in a shard folder is refused. A shard's
# harness.pub is allowed there but never read: the merge trusts only the keys it is given.
SHARD_FILES = frozenset({artifacts.BUNDLE, artifacts.BUNDLE + ".lock", artifacts.PUBLIC_KEY,
                         artifacts.RUN})
KEPT_FILES = frozenset({artifacts.BUNDLE, artifacts.PUBLIC_KEY})  # in shards/I/ of a merge


class MergeOptions(NamedTuple):
    """What to merge, where, and under which key."""

    shards: list[Path]
    out: Path
    plan: Path | None = None  # the plan folder: needed when the job builds rebuilds
    key_file: str | None = None
    key_env: str | None = None
    trusted: tuple = ()  # attest.pinned.Pinned: the keys the shards (and the plan) may be signed by


class Shard(NamedTuple):
    """One shard folder, verified on its own."""

    folder: Path
    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    count: int  # type: ignore[assignment]  # shadows tuple.count, on purpose
    job: dict[str, Any]  # the job section its records carry
    runs: list[SignedRun]
    bundle: bytes
    public_pem: bytes  # the pinned key that verified it


class Merged(NamedTuple):
    """What a merge wrote."""

    out: Path
    result: dict[str, Any]
    signed: int
    shards: int


def _grading_of(run: SignedRun) -> tuple[plan_mod.Grading | None, dict | None]:
    ctx = run.result.get("squeeze") if isinstance(run.result, dict) else None
    if not isinstance(ctx, dict) or not isinstance(ctx.get("grading"), dict):
        return None, None
    g = ctx["grading"]
    try:
        return plan_mod.Grading(g["group"], g["role"], g["controller"]), ctx.get("job")
    except KeyError:
        return None, None


def only_files(folder: Path, allowed: frozenset[str], where: str) -> list[str]:
    """Problems with what `folder` holds: anything not named in `allowed`, and any entry that
    is not a regular file (a link, a folder, a device, a FIFO, a socket), each named."""
    problems = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        return [f"{where}: cannot be listed ({e.strerror})"]
    for entry in entries:
        if entry.is_symlink():
            problems.append(f"{where}: {entry.name} is a symbolic link (a merge never follows "
                            "one); give the folder as the shard wrote it")
        elif entry.name not in allowed:
            problems.append(f"{where}: {entry.name} is not a file a shard writes; give the folder "
                            f"as the shard wrote it (only {', '.join(sorted(allowed))})")
        elif not entry.is_file(follow_symlinks=False):
            problems.append(f"{where}: {entry.name} is not a regular file (a device, FIFO, "
                            "socket or folder is never read)")
    return problems


def unpinned(where: str, data: bytes, flag: str = "--pub") -> str:
    """The refusal of a bundle signed by a key no one pinned, naming the key."""
    from plimsoll_ci.attest.pinned import claimed_keyid

    keyid = claimed_keyid(data)
    named = f"key sha256:{keyid}" if keyid else "a key it does not name"
    return (f"{where}: signed by {named}, which is not a pinned key; give the public key of "
            f"every shard with {flag} FILE, taken from where the shard ran (a secret, the "
            "repository), never from the shard's folder")


def _shard_of(folder: Path, trusted: tuple, problems: list[str]) -> Shard | None:
    """Read and check one shard folder; None (and its problems) when it cannot be used."""
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.pinned import verify_pinned
    from plimsoll_ci.attest.record import PREDICATE_TYPE
    from plimsoll_ci.files import read_bounded

    where = f"shard {folder}"
    if not folder.is_dir():
        problems.append(f"{where}: no such folder; give the --out folders of `squeeze run "
                        "--plan PLAN --shard I/N`")
        return None
    found = only_files(folder, SHARD_FILES, where)
    if found:
        problems += found
        return None
    try:
        data = bundle.read_bundle(folder / artifacts.BUNDLE, follow=False)
        raw = read_bounded(folder / artifacts.RUN, MAX_RUN_BYTES, f"{artifacts.RUN}", False)
        account = json.loads(raw)
    except BadInput as e:
        problems.append(f"{where}: {e}")
        return None
    except (ValueError, UnicodeDecodeError) as e:
        problems.append(f"{where}: {artifacts.RUN} is not JSON ({e}); is it a shard's folder?")
        return None
    key, report = verify_pinned(data, trusted)
    if key is None or report is None:
        problems.append(unpinned(where, data))
        return None
    if not report.ok:
        problems.append(f"{where}: {artifacts.BUNDLE} does not verify under the pinned "
                        f"{key.line()} ({report.problems[0]})")
        return None
    said = account.get("shard") if isinstance(account, dict) else None
    if not isinstance(said, dict) or not isinstance(said.get("index"), int) \
            or not isinstance(said.get("count"), int):
        problems.append(f"{where}: {artifacts.RUN} names no slice: not a shard (run it with "
                        "--plan PLAN --shard I/N)")
        return None
    if account.get("status") != "done":
        problems.append(f"{where}: status {account.get('status')!r}, not done: run the shard "
                        "again into a new folder")
        return None
    runs = signed_runs(data)
    job = None
    mine = []
    for run in runs:
        grading, ctx_job = _grading_of(run)
        if run.predicate_type != PREDICATE_TYPE or grading is None:
            problems.append(f"{where}: bundle line {run.line} is not a squeeze grading record")
            return None
        if job is None:
            job = ctx_job
        elif canonical.dumps(ctx_job) != canonical.dumps(job):
            problems.append(f"{where}: bundle line {run.line} names another job section than "
                            "line 1 (records of two plans mixed)")
            return None
        mine.append(grading)
    if job is None:
        problems.append(f"{where}: its bundle holds no grading")
        return None
    index, count = said["index"], said["count"]
    plan = [plan_mod.Grading(*g) for g in job.get("plan") or []]
    if not 1 <= index <= count or mine != plan[index - 1::count]:
        problems.append(f"{where}: its signed gradings are not slice {index}/{count} of the "
                        "plan its records name (a grading missing, extra or out of order)")
        return None
    return Shard(folder, index, count, job, runs, data, key.public.pem())


def _across(shards: list[Shard], problems: list[str]) -> None:
    """One job section, one N, each slice once."""
    first = shards[0]
    kind, section = plan_mod.unseen_section(first.job)
    for s in shards[1:]:
        if canonical.dumps(s.job) != canonical.dumps(first.job):
            their_kind, theirs = plan_mod.unseen_section(s.job)
            what = ("its unseen set's commitment" if (their_kind, theirs.get("commitment"))
                    != (kind, section.get("commitment")) else "its job section")
            problems.append(f"shard {s.folder}: {what} differs from shard {first.folder}'s "
                            "(shards of different plans): merge the shards of one plan")
        if s.count != first.count:
            problems.append(f"shard {s.folder}: slice {s.index}/{s.count}, but shard "
                            f"{first.folder} is {first.index}/{first.count}")
    seen: dict[int, Path] = {}
    for s in shards:
        if s.index in seen:
            problems.append(f"shard {s.folder}: slice {s.index}/{s.count} again (also "
                            f"{seen[s.index]}): slices overlap; give each slice once")
        seen.setdefault(s.index, s.folder)
    missing = [i for i in range(1, first.count + 1) if i not in seen]
    if missing:
        problems.append(f"slices {', '.join(f'{i}/{first.count}' for i in missing)} missing: "
                        "give every shard's folder")


def _sessions(job: dict[str, Any], plan: Path | None, trusted: tuple) -> tuple[list, Any]:
    """The plan (when given: it must be the plan the shards graded) and, for a job that builds,
    its session records, verified under a pinned key."""
    builds = bool((job.get("sessions") or {}).get("plan"))
    if plan is None:
        if builds:
            raise BadInput("the job builds rebuilds: their session records are in the plan; give "
                           "--plan PLAN (the folder of `squeeze plan`)")
        return [], None
    from plimsoll_ci.squeeze import planfile

    loaded = planfile.load(plan)
    if canonical.dumps(loaded.context) != canonical.dumps(job):
        raise BadInput(f"--plan {plan}: not the plan the shards graded (its job section "
                       "differs): give the plan the shards were run with")
    problems = planfile.check_folder(loaded)
    if problems:
        raise BadInput("bundle merge: refused, nothing written:\n  " + "\n  ".join(problems))
    return (planfile.session_records(loaded, trusted) if builds else []), loaded


def merge(options: MergeOptions) -> Merged:
    """Check every shard, then write the merged folder whole (see the module doc); BadInput
    listing every problem, and nothing written, when the shards cannot be merged."""
    if not options.shards:
        raise BadInput("bundle merge: give the shard folders to merge")
    if not options.trusted:
        raise BadInput("bundle merge: give --pub FILE for the key(s) the shards were signed by "
                       "(a merge never trusts a key found in a shard's folder; see docs/scale.md)")
    acct.refuse_used(options.out)
    problems: list[str] = []
    shards = [s for f in options.shards
              if (s := _shard_of(Path(f), tuple(options.trusted), problems)) is not None]
    if shards and not problems:
        _across(shards, problems)
    if problems:
        raise BadInput("bundle merge: refused, nothing written:", details=problems)
    shards.sort(key=lambda s: s.index)
    job = shards[0].job
    session_records, plan = _sessions(job, options.plan, tuple(options.trusted))
    by_grading = {}
    for s in shards:
        for run in s.runs:
            by_grading[_grading_of(run)[0]] = run
    ordered = [by_grading[plan_mod.Grading(*g)] for g in job["plan"]]
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.merging-", dir=out.parent))
    try:
        if plan is not None:
            from plimsoll_ci.squeeze import planfile

            planfile.copy_outputs(plan, work, session_records)  # first: a refusal writes nothing
        result = _write(work, options, shards, session_records, ordered)
        if out.is_dir():
            out.rmdir()  # empty (refuse_used); the whole folder appears at once
        os.rename(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Merged(out, result, len(ordered), len(shards))


def _write(work: Path, options: MergeOptions, shards: list[Shard], session_records: list,
           ordered: list[SignedRun]) -> dict[str, Any]:
    """Sign the merged bundle into `work`, keep the shards' bundles, derive every artifact."""
    import hashlib

    from plimsoll_ci.squeeze import run as run_mod

    job = shards[0].job
    signer = acct.signer(work, options.key_file, options.key_env)
    run_mod._sign(work, signer, session_records, [(r.result, r.predicate) for r in ordered])
    for s in shards:
        kept = work / SHARDS / str(s.index)
        kept.mkdir(parents=True)
        (kept / artifacts.BUNDLE).write_bytes(s.bundle)
        (kept / artifacts.PUBLIC_KEY).write_bytes(s.public_pem)
    kind, section = plan_mod.unseen_section(job)
    account: dict[str, Any] = {
        "format": acct.RUN_FORMAT, "status": "done", "merged": acct.now(),
        "job": {"sha256": job["job_sha256"]},
        ("fresh_commitment" if kind == "fresh" else "held_out_commitment"):
            section["commitment"],
        "gradings": {"planned": len(job["plan"]), "signed": len(ordered)},
        "key": {"id": signer.keyid, "ephemeral": signer.ephemeral},
        "versions": acct.versions(),
        "merge": {"format": MERGE_FORMAT, "shards": [
            {"index": s.index, "count": s.count, "folder": str(s.folder),
             "bundle_sha256": hashlib.sha256(s.bundle).hexdigest(),
             "records": len(s.runs)} for s in shards]},
    }
    if session_records:
        account["sessions"] = {"planned": len(job["sessions"]["plan"]),
                               "done": len(session_records)}
    result = run_mod.write_derived(work, signer.public)
    acct.write(work / artifacts.RUN, acct.dumps(account))
    return result


def check_provenance(folder: Path, data: bytes,
                     pinned: tuple | None = None) -> tuple[list[str], list[str]]:
    """(problems, notes) for a merged folder: every kept shard bundle verifies, and the merged
    gradings are exactly the shards' records (none added, none lost).

    With `pinned` (attest.pinned.Pinned, `--shard-pub`), each kept bundle must verify under one of
    them. Without, under the key kept beside it: that proves the merge kept what it says it
    merged (consistency), not who signed the shards, and the note says so.
    """
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.pinned import verify_pinned
    from plimsoll_ci.attest.record import PREDICATE_TYPE

    problems: list[str] = []
    theirs: list[bytes] = []
    kept = []
    for entry in sorted(os.scandir(folder / SHARDS), key=lambda e: e.name):
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False) \
                or not entry.name.isdigit():
            problems.append(f"{SHARDS}/{entry.name}: not a kept shard (a link, a file or a "
                            "folder a merge does not write)")
        else:
            kept.append(Path(entry.path))
    used: dict[str, str] = {}
    for one in kept:
        where = f"{SHARDS}/{one.name}"
        found = only_files(one, KEPT_FILES, where)
        if found:
            problems += found
            continue
        try:
            shard_data = bundle.read_bundle(one / artifacts.BUNDLE, follow=False)
            if pinned is None:
                public = load_public_key(one / artifacts.PUBLIC_KEY, follow=False)
                report = bundle.verify_bytes(shard_data, public)
                used[public.keyid] = f"{where}/{artifacts.PUBLIC_KEY}"
            else:
                key, pinned_report = verify_pinned(shard_data, pinned)
                if key is None or pinned_report is None:
                    problems.append(unpinned(where, shard_data, "--shard-pub"))
                    continue
                report = pinned_report
                used[key.public.keyid] = key.source
        except BadInput as e:
            problems.append(f"{where}: {e}")
            continue
        if not report.ok:
            problems.append(f"{where}: its bundle does not verify ({report.problems[0]})")
            continue
        theirs += [_pair(r) for r in signed_runs(shard_data)]
    ours = [_pair(r) for r in signed_runs(data) if r.predicate_type == PREDICATE_TYPE]
    if not problems and sorted(ours) != sorted(theirs):
        problems.append(f"{artifacts.BUNDLE}: its gradings are not exactly the records of the "
                        f"shards kept in {SHARDS}/ (a record added, lost or changed in the merge)")
    if problems:
        return problems, []
    keys = "; ".join(f"key sha256:{k[:16]}... (from {src})" for k, src in sorted(used.items()))
    notes = [f"merged from {len(kept)} shards; each shard's bundle verifies and the merged "
             f"gradings are exactly theirs ({SHARDS}/); shard keys trusted: {keys}"]
    if pinned is None:
        notes.append(f"consistency only: the shards verified under the keys kept beside them in "
                     f"{SHARDS}/, which proves the merge holds what it kept, not who signed the "
                     "shards; give --shard-pub FILE (the key the shards were signed by) to prove "
                     "that")
    return problems, notes


def _pair(run: SignedRun) -> bytes:
    return canonical.dumps([run.result, run.predicate])
