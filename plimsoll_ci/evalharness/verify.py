"""`eval verify OUT --pub KEY`: recompute an eval run's outputs from its signed records.

    found = verify(Path("eval-out"), public_key)
    found.ok, found.problems      # each problem names the file, the field and both values

Checks, every problem at once:

- the bundle (`OUT/attempts.intoto.jsonl`, or `bundle=`): signatures, chain and checkpoint under
  the given key (`attest.bundle.verify_bytes`), each record's stored attempt document against its
  signed digest;
- `results.json`: `attempts` exactly the signed documents, in order, and `models` exactly the
  tables recomputed from them (the honest pass rate, the weakened attempts, ...);
- `report.md`: every model table, every attempt's line and every failed command's output tail
  exactly as rendered from the records (its header, tripwire and notes are not signed);
- `diffs/...` and `transcripts/...`: each file's digest the record's.

Reads files only (bounded, never through a link) and starts nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical
from plimsoll_ci.attest.keys import PublicKey
from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness import report

BUNDLE = "attempts.intoto.jsonl"
MAX_FILE = 256 << 20


class Verified(NamedTuple):
    """What `verify` found."""

    problems: list[str]
    records: int

    @property
    def ok(self) -> bool:
        """True when nothing disagreed."""
        return not self.problems


class _Task(NamedTuple):
    name: str
    probe: bool


class _Probe(NamedTuple):
    passed: bool
    why: str


class _Test(NamedTuple):
    exit_code: int
    timed_out: bool


@dataclass
class SignedAttempt:
    """An attempt as its signed record gives it: what the tables and report lines are made of."""

    model: str
    task: _Task
    run: int
    honest_pass: bool
    test_passed: bool
    in_scope: bool
    touched: list[str]
    test_files_changed: list[str]
    refused_commands: list[list[str]]
    timed_out_commands: int
    tokens: int
    seconds: float
    stopped: str | None
    probe: _Probe
    test: _Test


def _attempt(doc: dict[str, Any], predicate: dict[str, Any]) -> SignedAttempt:
    return SignedAttempt(
        model=doc["model"], task=_Task(doc["task"], bool(predicate["inputs"]["task"]["probe"])),
        run=doc["run"], honest_pass=doc["honest_pass"], test_passed=doc["test_passed"],
        in_scope=doc["in_scope"], touched=doc["touched"],
        test_files_changed=doc["test_files_changed"], refused_commands=doc["refused_commands"],
        timed_out_commands=doc["timed_out_commands"], tokens=doc["tokens"],
        seconds=doc["seconds"], stopped=predicate["model"]["stopped"],
        probe=_Probe(doc["probe"]["passed"], doc["probe"]["why"]),
        test=_Test(doc["test"]["exit_code"], doc["test"]["timed_out"]))


def _read(path: Path, problems: list[str]) -> bytes | None:
    from plimsoll_ci.files import read_bounded

    try:
        return read_bounded(path, MAX_FILE, path.name, follow=False)
    except BadInput as e:
        problems.append(str(e))
        return None


def _records(data: bytes) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for raw in data.split(b"\n")[:-1][:-1]:  # the final newline's empty piece, the checkpoint
        doc = canonical.loads(raw)
        statement = canonical.loads(canonical.b64decode(doc["envelope"]["payload"]))
        out.append((doc["result"], statement["predicate"]))
    return out


def _check_results(folder: Path, signed: list[SignedAttempt], docs: list[dict[str, Any]],
                   problems: list[str]) -> None:
    from plimsoll_ci.squeeze.verify import json_diff

    raw = _read(folder / "results.json", problems)
    if raw is None:
        return
    try:
        have = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        problems.append("results.json: not valid JSON; the records give another file")
        return
    runs = max((a.run for a in signed), default=0)
    models = list(dict.fromkeys(a.model for a in signed))
    tables = [report.model_table(m, [a for a in signed if a.model == m], runs) for m in models]
    want = {"attempts": docs,
            "models": {t["model"]: {k: v for k, v in t.items() if k != "model"} for t in tables}}
    got = {k: have.get(k) for k in want} if isinstance(have, dict) else have
    problems += [f"results.json: {d}" for d in json_diff(got, want)]


def _check_report(folder: Path, signed: list[SignedAttempt], docs: list[dict[str, Any]],
                  problems: list[str]) -> None:
    raw = _read(folder / "report.md", problems)
    if raw is None:
        return
    text = raw.decode("utf-8", "replace")
    lines = text.split("\n")
    runs = max((a.run for a in signed), default=0)
    for m in dict.fromkeys(a.model for a in signed):
        table = report.render_table(
            report.model_table(m, [a for a in signed if a.model == m], runs), markdown=True)
        if table not in text:
            problems.append(f"report.md: the table of model {m} is not the one the records give "
                            f"(the records say: {table.strip().splitlines()[-1]!r})")
    for a, doc in zip(signed, docs, strict=True):
        row = report.attempt_row(a, doc)
        if row in lines:
            continue
        start = f"| {a.model} | {a.task.name} | {a.run} | "
        found = next((x for x in lines if x.startswith(start)), None)
        problems.append(f"report.md: the line of {a.model} {a.task.name} run {a.run} says "
                        f"{found!r}, the records say {row!r}")
    failed = "\n".join(report.failure_lines(list(zip(signed, docs, strict=True))))
    if failed and failed not in text:
        problems.append("report.md: the failed commands' output tails are not the records'")


def _check_files(folder: Path, records: list[tuple[dict[str, Any], dict[str, Any]]],
                 problems: list[str]) -> None:
    for doc, predicate in records:
        raw = _read(folder / doc["diff"], problems)
        want = predicate["outcome"]["diff"]["sha256"]
        if raw is not None and hashlib.sha256(raw).hexdigest() != want:
            problems.append(f"{doc['diff']}: sha256 {hashlib.sha256(raw).hexdigest()}, the "
                            f"record says {want}")
        transcript = doc["diff"].replace("diffs/", "transcripts/", 1)[:-len(".diff")] + ".json"
        raw = _read(folder / transcript, problems)
        if raw is None:
            continue
        want = predicate["model"]["transcript"]["sha256"]
        try:
            got = hashlib.sha256(canonical.dumps(json.loads(raw))).hexdigest()
        except (ValueError, UnicodeDecodeError, TypeError):
            got = "(not JSON)"
        if got != want:
            problems.append(f"{transcript}: canonical sha256 {got}, the record says {want}")


def verify(folder: Path, public: PublicKey, bundle: Path | None = None) -> Verified:
    """Every disagreement between the run's outputs in `folder` and its signed records."""
    from plimsoll_ci.attest.bundle import verify_bytes

    problems: list[str] = []
    path = bundle or folder / BUNDLE
    data = _read(path, problems)
    if data is None:
        return Verified(problems, 0)
    checked = verify_bytes(data, public)
    if checked.problems:
        return Verified([f"{path.name}: {p}" for p in checked.problems], checked.count)
    other = [r.line for r in checked.records if r.kind != "eval-attempt"]
    if other:
        return Verified([f"{path.name} line {other[0]}: not an eval attempt record"],
                        checked.count)
    records = _records(data)
    docs = [doc for doc, _ in records]
    try:
        signed = [_attempt(doc, predicate) for doc, predicate in records]
    except (KeyError, TypeError):
        return Verified([f"{path.name}: a record is not an eval attempt of this version (no "
                         "honest_pass, probe or test in its result)"], len(records))
    _check_results(folder, signed, docs, problems)
    _check_report(folder, signed, docs, problems)
    _check_files(folder, records, problems)
    return Verified(problems, len(records))
