"""`bundle merge`: the shards of one plan into the folder one runner would have written.

    merged = merge(MergeOptions([Path("s1"), Path("s2")], Path("out")))

Each shard folder (`squeeze run JOB --plan PLAN --shard I/N --out DIR`) is checked on its own
first, every problem at once, each naming its folder:

- its bundle verifies under its own `harness.pub` (signatures, chain, checkpoint);
- its `run.json` says it finished (`done`) and which slice it graded (I of N);
- every record is a grading of the plan its records name, and the records are exactly slice I of
  N of that plan (`plan.shard`), none twice.

Then across shards: one job section (the same commitment, the same plan), one N, every slice
1..N exactly once (none missing, none twice). Any problem: exit 2 and nothing written.

The merged folder is built beside `--out` and renamed into place when whole: the shards' records
signed again, in plan order, under the merge's key (`harness.pub`; after the plan's session
records, for a job that builds: `--plan`), then every artifact derived from that bundle by the
road `squeeze run` takes, so `result.json` is byte for byte what one runner writes. Each shard's
original bundle and key are kept under `shards/I/`, and `squeeze verify` checks that the merged
records are exactly theirs (`check_provenance`).
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


class MergeOptions(NamedTuple):
    """What to merge, where, and under which key."""

    shards: list[Path]
    out: Path
    plan: Path | None = None  # the plan folder: needed when the job builds rebuilds
    key_file: str | None = None
    key_env: str | None = None


class Shard(NamedTuple):
    """One shard folder, verified on its own."""

    folder: Path
    index: int
    count: int
    job: dict[str, Any]  # the job section its records carry
    runs: list[SignedRun]
    bundle: bytes
    public_pem: bytes


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


def _shard_of(folder: Path, problems: list[str]) -> Shard | None:
    """Read and check one shard folder; None (and its problems) when it cannot be used."""
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.record import PREDICATE_TYPE

    where = f"shard {folder}"
    if not folder.is_dir():
        problems.append(f"{where}: no such folder; give the --out folders of `squeeze run "
                        "--plan PLAN --shard I/N`")
        return None
    try:
        public = load_public_key(folder / artifacts.PUBLIC_KEY)
        data = bundle.read_bundle(folder / artifacts.BUNDLE)
        account = json.loads((folder / artifacts.RUN).read_bytes())
    except BadInput as e:
        problems.append(f"{where}: {e}")
        return None
    except (OSError, ValueError) as e:
        problems.append(f"{where}: {artifacts.RUN} cannot be read ({e}); is it a shard's folder?")
        return None
    report = bundle.verify_bytes(data, public)
    if not report.ok:
        problems.append(f"{where}: {artifacts.BUNDLE} does not verify under its "
                        f"{artifacts.PUBLIC_KEY} ({report.problems[0]})")
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
    return Shard(folder, index, count, job, runs, data,
                 (folder / artifacts.PUBLIC_KEY).read_bytes())


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


def _sessions(job: dict[str, Any], plan: Path | None) -> tuple[list, Any]:
    """The plan's session records for a job that builds (and the plan), else none."""
    if not (job.get("sessions") or {}).get("plan"):
        return [], None
    if plan is None:
        raise BadInput("the job builds rebuilds: their session records are in the plan; give "
                       "--plan PLAN (the folder of `squeeze plan`)")
    from plimsoll_ci.squeeze import planfile

    loaded = planfile.load(plan)
    if canonical.dumps(loaded.context) != canonical.dumps(job):
        raise BadInput(f"--plan {plan}: not the plan the shards graded (its job section "
                       "differs)")
    return planfile.session_records(loaded), loaded


def merge(options: MergeOptions) -> Merged:
    """Check every shard, then write the merged folder whole (see the module doc); BadInput
    listing every problem, and nothing written, when the shards cannot be merged."""
    if not options.shards:
        raise BadInput("bundle merge: give the shard folders to merge")
    acct.refuse_used(options.out)
    problems: list[str] = []
    shards = [s for f in options.shards if (s := _shard_of(Path(f), problems)) is not None]
    if shards and not problems:
        _across(shards, problems)
    if problems:
        raise BadInput("bundle merge: refused, nothing written:", details=problems)
    shards.sort(key=lambda s: s.index)
    job = shards[0].job
    session_records, plan = _sessions(job, options.plan)
    by_grading = {}
    for s in shards:
        for run in s.runs:
            by_grading[_grading_of(run)[0]] = run
    ordered = [by_grading[plan_mod.Grading(*g)] for g in job["plan"]]
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.merging-", dir=out.parent))
    try:
        result = _write(work, options, shards, session_records, ordered)
        if plan is not None:
            from plimsoll_ci.squeeze import planfile

            planfile.copy_outputs(plan, work)
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


def check_provenance(folder: Path, data: bytes) -> tuple[list[str], list[str]]:
    """(problems, notes) for a merged folder: every kept shard bundle verifies under its kept
    key, and the merged gradings are exactly the shards' records (none added, none lost)."""
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.record import PREDICATE_TYPE

    problems: list[str] = []
    theirs: list[bytes] = []
    kept = sorted((p for p in (folder / SHARDS).iterdir() if p.is_dir()), key=lambda p: p.name)
    for one in kept:
        where = f"{SHARDS}/{one.name}"
        try:
            public = load_public_key(one / artifacts.PUBLIC_KEY)
            shard_data = bundle.read_bundle(one / artifacts.BUNDLE)
        except BadInput as e:
            problems.append(f"{where}: {e}")
            continue
        report = bundle.verify_bytes(shard_data, public)
        if not report.ok:
            problems.append(f"{where}: its bundle does not verify under its key "
                            f"({report.problems[0]})")
            continue
        theirs += [_pair(r) for r in signed_runs(shard_data)]
    ours = [_pair(r) for r in signed_runs(data) if r.predicate_type == PREDICATE_TYPE]
    if not problems and sorted(ours) != sorted(theirs):
        problems.append(f"{artifacts.BUNDLE}: its gradings are not exactly the records of the "
                        f"shards kept in {SHARDS}/ (a record added, lost or changed in the merge)")
    notes = [f"merged from {len(kept)} shards; each shard's bundle verifies under its own key "
             f"and the merged gradings are exactly theirs ({SHARDS}/)"] if not problems else []
    return problems, notes


def _pair(run: SignedRun) -> bytes:
    return canonical.dumps([run.result, run.predicate])
