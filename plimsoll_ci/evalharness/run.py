"""A whole eval run: every model x task x run, then results, report, records and the tripwire.

    result = run_eval(EvalRequest(repo, tasks, models, out), signer=None, bundle=None)
    result.exit_code     # 0 done, 1 refused (the copy holds a withheld entry) or a tripwire hit

Order: the tasks and the snapshot are read; the snapshot is ship-scanned against the withheld
sets (a finding refuses the run before any model is called); the model clients are made (the key
is checked); the provider's start-up checks earn the tier; the recording proxy starts; the
attempts run one after another; the tripwire reads the recording; `results.json`, `report.md`,
the kept diffs and transcripts are written; one signed record per attempt is appended.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import eval_record
from plimsoll_ci.errors import BadInput
from plimsoll_ci.evalharness import report, wall
from plimsoll_ci.evalharness.attempt import (
    DEFAULT_ALLOW,
    Attempt,
    Setup,
    run_attempt,
    transcript_digest,
)
from plimsoll_ci.evalharness.contract import printable
from plimsoll_ci.evalharness.probe import preflight
from plimsoll_ci.evalharness.snapshot import Snapshot, take
from plimsoll_ci.evalharness.tasks import Task, load_tasks
from plimsoll_ci.evalharness.venv import task_view, venv_view
from plimsoll_ci.model import ModelClient, ModelConfig, read_key
from plimsoll_ci.sandbox.command import CommandLimits, View

FORMAT = "plimsoll-eval-results/1"
ProgressFn = Callable[[str], None]
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class EvalRequest:
    """Everything one run needs; the CLI builds one from its flags."""

    repo: str
    tasks: str
    models: tuple[ModelConfig, ...]
    out: str
    runs: int = 3
    turns: int = 1
    allow: tuple[str, ...] = DEFAULT_ALLOW
    provider: str = "gvisor"
    min_tier: str | None = None
    limits: CommandLimits = CommandLimits()
    withheld: tuple[Any, ...] = ()  # WithheldSet: a finding in the copy refuses the run
    sealed: Any = None  # a sealed set the recorded requests are checked against
    venv: str | None = None  # the repository's environment, mounted read-only (venv.py)
    keep: tuple[str, ...] = ()  # globs of paths left out as credentials that the copy keeps
    jobs: int = 1  # models whose attempts run side by side
    disk_mb: int = 512  # the disk quota of each attempt's copy


class EvalResult(NamedTuple):
    """What a run did and wrote."""

    attempts: list[Attempt]
    documents: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    refused: Any  # the ship scan's ScanResult when it refused the copy, else None
    tripwire: Any  # the tripwire's ScanResult when a sealed set was given, else None
    out: Path
    records: int  # signed records appended (0 without a signer)

    @property
    def exit_code(self) -> int:
        """0 done; 1 when the copy was refused or a sealed value reached the model."""
        if self.refused is not None:
            return 1
        return 1 if self.tripwire is not None and self.tripwire.refused else 0


def _check(request: EvalRequest) -> None:
    if not request.models:
        raise BadInput("--model: give at least one model")
    if request.disk_mb < 1:
        raise BadInput(f"--disk-mb {request.disk_mb}: give 1 or more")
    if request.jobs < 1:
        raise BadInput(f"--jobs {request.jobs}: give 1 or more")
    if request.runs < 1 or request.turns < 1:
        raise BadInput(f"--runs {request.runs} / --turns {request.turns}: give 1 or more")
    if not request.limits.timeout_s > 0:
        raise BadInput(f"--timeout {request.limits.timeout_s}: give a positive number of seconds")
    bad = [p for p in request.allow if not p or "/" in p or p.strip() != p]
    if bad:
        raise BadInput(f"--allow {bad[0]!r}: a program name, without a path or spaces")


def folder_names(models: tuple[ModelConfig, ...]) -> dict[str, str]:
    """Each model's folder name under diffs/ and transcripts/; BadInput when two collide."""
    names: dict[str, str] = {}
    for config in models:
        safe = _SAFE.sub("_", config.model)
        safe = "_" + safe if safe.startswith(".") else safe
        if config.model in names:
            raise BadInput(f"--model {config.model}: given twice")
        if safe in names.values():
            raise BadInput(f"--model {config.model}: its folder name {safe} is another "
                           "model's too; run them separately")
        names[config.model] = safe
    return names


def _out_folder(out: str) -> Path:
    path = Path(out)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BadInput(f"--out {out}: already holds files; give a new or empty folder (a run "
                       "never writes over an earlier one)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"--out {out}: cannot create ({e.strerror})") from None
    return path


def _write(path: Path, text: str) -> str:
    """Write `text` whole (temp file, then rename); its SHA-256. A file name's undecodable bytes
    are written as they were; anything else UTF-8 cannot carry as a backslash escape."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


def _ship_scan(snapshot: Snapshot, withheld: tuple[Any, ...]) -> Any:
    from plimsoll_ci.shipscan.results import combine
    from plimsoll_ci.shipscan.scan import Item, scan_items

    if not withheld:
        return None
    parts = [(w.origin, scan_items([Item(f.path, f.data) for f in snapshot.files], w))
             for w in withheld]
    return combine(parts)


def _predicate(a: Attempt, doc: dict[str, Any], context: dict[str, Any],
               hashes: tuple[str, str]) -> dict[str, Any]:
    snapshot: Snapshot = context["snapshot"]
    diff_sha, output_sha = hashes
    return eval_record.make_predicate(
        result_doc=doc,
        attempt={"model": a.model, "run": a.run, "task": a.task.name},
        inputs={"allowlist": sorted(set(context["allow"]) | set(a.task.allow)),
                "repository": {"files": len(snapshot.files), "sha256": snapshot.digest},
                "task": {"probe": a.task.probe, "sha256": a.task.sha256,
                         "test": list(a.task.test), "touch": list(a.task.touch)},
                "turns": context["turns"]},
        model={"baseUrl": context["base_urls"][a.model], "stopped": a.stopped, "tokens": a.tokens,
               "transcript": {"sha256": a.transcript_sha256}},
        outcome={"diff": {"sha256": diff_sha}, "finalTree": {"sha256": a.diff.final_digest},
                 "guardedTest": {"exitCode": a.test.exit_code, "output": {"sha256": output_sha}}},
        sandbox={"evidence": {"startup": context["evidence"], "command": a.evidence},
                 "provider": context["provider"], "tier": context["tier"]},
        started=a.started.replace(microsecond=0), finished=a.finished.replace(microsecond=0))


def _scrubber(keys: list[Any], request: EvalRequest) -> Callable[[str], str]:
    """What every kept output passes through: the keys redacted, and an output holding a
    withheld or sealed entry held back whole (its entry named, never its value)."""
    from plimsoll_ci.scrub import Scrubber

    scrubber = Scrubber([k for k in keys if isinstance(k, str)])
    held = _holder(request)

    def scrub(text: str) -> str:
        text = scrubber.text(text) if scrubber else text
        return held(text) or text

    return scrub


def _holder(request: EvalRequest) -> Callable[[str], str | None]:
    """`held(text)`: what replaces `text` when it holds a withheld or sealed entry (naming the
    entry, never its value), else None."""
    from plimsoll_ci.shipscan.scan import Item, scan_items

    sets = [*request.withheld, *([request.sealed] if request.sealed is not None else [])]

    def held(text: str) -> str | None:
        for s in sets:
            try:
                found = scan_items([Item("output", text.encode("utf-8", "replace"))], s)
            except Exception:  # noqa: BLE001 - a set this scan cannot read: hold it all back
                return "[held back: it could not be checked against the withheld sets]"
            if found.findings:
                return f"[held back: it holds withheld entry {found.findings[0].entry}]"
        return None

    return held


def _kept(a: Attempt, held: Callable[[str], str | None]) -> Attempt:
    """The attempt as its diff and transcript are kept: a file's section of the diff, or a
    string of the transcript (a reply, a command's argument, a fed-back output), that holds a
    withheld or sealed entry is held back whole, its entry named; the transcript's digest is
    the kept one's, so the signed record and `eval verify` name what was written."""
    if held(a.diff.text) is not None:
        parts = re.split(r"(?m)^(?=diff --git )", a.diff.text)
        a = replace(a, diff=a.diff._replace(text="".join(
            part if (why := held(part)) is None else part.partition("\n")[0] + f"\n{why}\n"
            for part in parts if part)))
    if held(json.dumps(a.transcript, ensure_ascii=False)) is not None:
        def walk(doc: Any) -> Any:
            if isinstance(doc, str):
                return held(doc) or doc
            if isinstance(doc, list):
                return [walk(x) for x in doc]
            if isinstance(doc, dict):
                return {k: walk(v) for k, v in doc.items()}
            return doc

        transcript = walk(a.transcript)
        a = replace(a, transcript=transcript, transcript_sha256=transcript_digest(transcript))
    return a


def _line(a: Attempt) -> str:
    test = "passed" if a.test_passed else f"failed (exit {a.test.exit_code})"
    scope = "in scope" if a.in_scope else \
        f"OUT OF SCOPE ({', '.join(printable(p) for p in a.touched)})"
    extra = f"; stopped: {a.stopped}" if a.stopped else f"; {a.nothing}" if a.nothing else ""
    if a.test_passed:
        extra += "; honest pass" if a.honest_pass else f"; NOT an honest pass (probe: {a.probe.why})"
    return (f"{a.model} {a.task.name} run {a.run}: test {test}, {scope}, refused "
            f"{len(a.refused_commands)}, timed out {a.timed_out_commands}, {a.tokens} tokens, "
            f"{a.seconds:.1f} s{extra}")


def tripwire_lines(result: Any) -> list[str]:
    """The tripwire's findings as report lines: recorded file (under the output folder), place,
    sealed id; never a value."""
    from plimsoll_ci.shipscan.report import place

    if result is None:
        return []
    lines = [f"- `requests/{f.path}` {place(f)}{' at ' + f.chain if f.chain else ''}: sealed {f.kind} "
             f"`{f.entry}`{' (' + f.detail + ')' if f.detail else ''}" for f in result.findings]
    n = len(result.findings)
    lines.append(f"Tripwire: {n} hit(s) in {result.files} recorded file(s)." + (
        " A sealed value reached a model: this run's scores are not evidence." if n else
        " No sealed value was sent."))
    return lines


def run_eval(request: EvalRequest, signer: Any = None, bundle: str | None = None,
             progress: ProgressFn | None = None,
             environ: Mapping[str, str] | None = None) -> EvalResult:
    """Run every attempt `request` asks for and write its results under `request.out`.

    BadInput for bad input (nothing sent to a model); SandboxError when the provider cannot
    start at the tier asked for. Never raises because of what a model or its commands did."""
    say = progress or (lambda text: None)
    _check(request)
    if (signer is None) != (bundle is None):
        raise BadInput("signing needs a key and a bundle, or neither")
    tasks = load_tasks(request.tasks)
    names = folder_names(request.models)
    snapshot = take(request.repo, request.keep)
    size = sum(len(f.data) for f in snapshot.files)
    if size * 2 > request.disk_mb * 1024 * 1024:
        raise BadInput(f"--disk-mb {request.disk_mb}: the copy alone is {size} bytes; give at "
                       "least twice that, so commands have room to write")
    out = _out_folder(request.out)
    notes = list(snapshot.notes) + [f"left out of every copy: {x.path} ({x.why})"
                                    for x in snapshot.left_out]
    scan = _ship_scan(snapshot, request.withheld)
    if scan is not None and scan.findings:
        notes += [f"ship scan of the copy: {f.path}: withheld {f.kind} {f.entry}"
                  + (f" ({f.detail})" if f.detail else "") for f in scan.findings]
    if scan is not None and scan.refused:
        _write(out / "report.md", "# plimsoll-ci eval\n\nRefused before any model was called: "
               "the copy holds withheld entries.\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
        return EvalResult([], [], [], scan, None, out, 0)
    keys = [read_key(config.api_key_env, environ) for config in request.models]  # checked first
    if signer is not None and bundle is not None:  # (both or neither: checked above)
        from plimsoll_ci.grading.sign import check_bundle

        check_bundle(bundle, signer)
    tier, evidence = wall.earn_tier(request.provider, request.min_tier)
    notes += list(evidence.get("tier_notes", []))
    say(f"eval: {len(tasks)} task(s) x {len(request.models)} model(s) x {request.runs} run(s) in "
        f"{request.provider} (tier {tier}); copy of {len(snapshot.files)} tracked files")
    base = venv_view(request.venv) if request.venv else View()
    views = {t.name: task_view(base, t, snapshot) for t in tasks}
    setup = Setup(snapshot, request.provider, request.limits, tuple(request.allow), request.turns,
                  views, disk_mb=request.disk_mb)
    try:
        pre = preflight(setup, tasks, views)
    except BadInput:
        try:
            out.rmdir()  # nothing half written: the folder this run made, still empty
        except OSError:
            pass
        raise
    for name, p in pre.items():
        if p.invalid:
            notes.append(f"task {name} is invalid and not scored: {p.invalid}")
            say(f"eval: task {name} is invalid and not scored: {p.invalid}")
    setup = setup._replace(pre=pre)
    scored = [t for t in tasks if not pre[t.name].invalid]
    attempts = _attempts(request, setup, scored, out, (environ, say))
    context = {"snapshot": snapshot, "allow": request.allow, "turns": request.turns,
               "base_urls": {c.model: c.base_url for c in request.models}, "evidence": evidence,
               "provider": request.provider, "tier": tier, "names": names, "notes": notes,
               "pre": pre, "venv": base, "tasks": {t.name: t for t in tasks},
               "scrub": _scrubber(keys, request)}
    return _finish(request, attempts, context, out, (signer, bundle))


def _attempts(request: EvalRequest, setup: Setup, tasks: list[Task], out: Path,
              how: tuple[Mapping[str, str] | None, ProgressFn]) -> list[Attempt]:
    """Every model's attempts, `request.jobs` models side by side; the result is in the same
    order (model, task, run) for any number of jobs."""
    from concurrent.futures import ThreadPoolExecutor

    environ, say = how
    origins = list(dict.fromkeys(wall.split_base_url(c.base_url)[0] for c in request.models))
    servers: dict[str, tuple[Any, str]] = {}
    try:
        for i, origin in enumerate(origins):
            # every request goes through a recorder (which writes the key's header as
            # [redacted]): one per endpoint, each in its own folder when there are several
            folder = out / "requests" / (f"{i + 1}" if len(origins) > 1 else "")
            servers[origin] = wall.start_recorder(origin, folder)

        def one_model(config: ModelConfig) -> list[Attempt]:
            origin, prefix = wall.split_base_url(config.base_url)
            # each model has the whole --max-tokens budget, and its own client
            client = ModelClient(config, environ=environ, via=servers[origin][1] + prefix)
            done = []
            for task in tasks:
                for run in range(1, request.runs + 1):
                    attempt = run_attempt(setup, client, task, run)
                    done.append(attempt)
                    say(_line(attempt))
            return done

        with ThreadPoolExecutor(max(1, min(request.jobs, len(request.models)))) as pool:
            per_model = list(pool.map(one_model, request.models))
    finally:
        for server, _ in servers.values():
            wall.stop_recorder(server)
    return [a for attempts in per_model for a in attempts]


def _finish(request: EvalRequest, attempts: list[Attempt], context: dict[str, Any], out: Path,
            signing: tuple[Any, str | None]) -> EvalResult:
    names: dict[str, str] = context["names"]
    notes: list[str] = context["notes"]
    pre = context["pre"]
    tripwire = (wall.scan_requests(out / "requests", request.sealed)
                if request.sealed is not None else None)
    docs, kept, runs = [], [], []
    held = _holder(request)
    attempts = [_kept(a, held) for a in attempts]
    for a in attempts:
        where = f"{names[a.model]}/{a.task.name}/{a.run}"
        diff_sha = _write(out / "diffs" / f"{where}.diff", a.diff.text)
        _write(out / "transcripts" / f"{where}.json", json.dumps(a.transcript, indent=1) + "\n")
        doc = report.attempt_doc(a, f"diffs/{where}.diff", context["scrub"])
        docs.append(doc)
        kept.append((a, doc))
        # of the tail results.json keeps (redacted), so anyone can check it against the record
        output_sha = hashlib.sha256(doc["test"]["output_tail"].encode("utf-8")).hexdigest()
        runs.append((doc, (diff_sha, output_sha)))
    tables = [report.model_table(c.model, [a for a in attempts if a.model == c.model],
                                 request.runs) for c in request.models]
    snapshot: Snapshot = context["snapshot"]
    run_info = {"repo": request.repo, "files": len(snapshot.files), "repo_sha256": snapshot.digest,
                "tasks": sorted({a.task.name for a in attempts}), "runs": request.runs,
                "turns": request.turns, "provider": request.provider, "tier": context["tier"],
                "allow": list(request.allow), "timeout": request.limits.timeout_s,
                "task_allow": {a.task.name: list(a.task.allow) for a in attempts}}
    signer, bundle = signing
    if signer is None:
        notes.append("no signing key was given: the attempts are not signed (--bundle FILE "
                     "with --signing-key-file, --signing-key-env or --ephemeral-key)")
    results = {"format": FORMAT, "attempts": docs,
               "left_out": [{"path": printable(x.path), "why": x.why} for x in snapshot.left_out],
               "models": {t["model"]: {k: v for k, v in t.items() if k != "model"}
                          for t in tables},
               "tasks": {name: {"allow": list(t.allow), "invalid": pre[name].invalid or None,
                                "preflight": report.command_doc(pre[name].ran.outcome,
                                                                context["scrub"])}
                         for name, t in context["tasks"].items()},
               "tripwire": None if tripwire is None else {
                   "hits": len(tripwire.findings), "files": tripwire.files}}
    _write(out / "results.json", json.dumps(results, indent=2) + "\n")
    _write(out / "report.md", report.render_markdown(run_info, tables, kept,
                                                      tripwire_lines(tripwire), notes))
    records = 0
    if signer is not None and bundle is not None and attempts:
        from plimsoll_ci.attest.bundle import append_runs

        pairs = [(doc, _predicate(a, doc, context, hashes))
                 for a, (doc, hashes) in zip(attempts, runs, strict=True)]
        append_runs(bundle, pairs, signer, eval_record.PREDICATE_TYPE)
        records = len(pairs)
    return EvalResult(attempts, docs, tables, None, tripwire, out, records)
