"""`squeeze plan`: settle a job's unseen set once, so shards on other machines grade against it.

    plimsoll-ci squeeze plan JOB --out PLAN                     # one machine, before any flight
    plimsoll-ci squeeze run JOB --plan PLAN --shard I/N --out SHARD_I     # N machines, at once
    plimsoll-ci bundle merge SHARD_1 ... SHARD_N --plan PLAN --out DIR    # one machine, after

A plan folder holds:

- `plan.json` (`plimsoll-squeeze-plan/1`): the job file's path and digest; the job section every
  record will carry (course, lines, practice digest, the unseen set's commitment, recipes, every
  grading in plan order, the sessions); every grading's code checks, which pin the files each
  controller is made of; whether weak seeds are allowed, and the seed lint's record;
- `fresh-set.json` (mode 0600, the `seeds draw` set-file form): the fresh set's seeds and salt,
  which the shards fly. A plan on a held-out set (`--sealed`) keeps only its commitment,
  `held-out.commit`: each shard is given `--sealed` and `--reveal` itself, so a held-out seed is
  never in a plan;
- for a job that builds: the rebuild sessions ran when the plan was made. Their records are signed
  in `bundle.intoto.jsonl` under `harness.pub`, `built/GROUP/N/` holds the graded sessions'
  workspaces and `requests/` their recordings;
- `run.json`: the plan's account (times, versions, the sessions' tokens).

Why the fresh set may travel to the shards before the last flight: its secrecy matters while what
flies it can still change, and nothing graded can. The imported controllers existed before the
set was drawn, and every shard checks that each controller's files are the ones the plan's code
checks read (a changed file stops the shard); the rebuilds were made behind the wall, whose
tripwire checks every request against the fresh seeds too. A held-out set stays off the plan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.squeeze import artifacts, checks, recipes
from plimsoll_ci.squeeze import plan as plan_mod
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.plan import Unseen
from plimsoll_ci.tripwire.formats import RECORDER_LOCK

PLAN_FORMAT = "plimsoll-squeeze-plan/1"
PLAN_FILE = "plan.json"
FRESH_FILE = "fresh-set.json"
HELD_OUT_FILE = "held-out.commit"
KEYS = frozenset({"format", "job", "context", "code_checks", "allow_weak_seeds", "seed_check",
                  "planned", "unseen"})
MAX_PLAN_BYTES = 64 << 20


class Plan(NamedTuple):
    """A plan folder, read and checked (`load`)."""

    folder: Path
    sha256: str  # of plan.json's bytes: every shard's run.json names it
    doc: dict[str, Any]
    allow_weak: bool
    fresh: FreshSet | None  # None for a plan on a held-out set
    held_out: Any  # seedsets.Commitment of a held-out set, or None

    @property
    def context(self) -> dict[str, Any]:
        """The job section every record of the planned run carries."""
        return self.doc["context"]

    def gradings(self) -> list[plan_mod.Grading]:
        """Every grading of the plan, in plan order."""
        return [plan_mod.Grading(*g) for g in self.context["plan"]]


class Planned(NamedTuple):
    """What a run with a plan flies and grades."""

    unseen: Unseen
    work: plan_mod.Work


def _made(context: dict[str, Any]) -> frozenset[tuple[str, int]]:
    """The built sessions whose controllers the plan grades."""
    out = set()
    for group, role, controller in context["plan"]:
        if role != "loop" and controller.startswith(plan_mod.BUILT):
            out.add((group, int(controller.rsplit("/", 1)[1])))
    return frozenset(out)


def canonical_text(doc: dict[str, Any]) -> str:
    """plan.json's one text form."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(folder: str | Path) -> Plan:
    """Read a plan folder strictly; BadInput naming the file and what is wrong."""
    from plimsoll_ci.grading import fresh, seedsets

    folder = Path(folder)
    path = folder / PLAN_FILE
    where = f"--plan {folder}"
    try:  # a FIFO or a device in its place is never read; a plan over the bound is refused
        data = read_bounded(path, MAX_PLAN_BYTES, f"{where}: {PLAN_FILE}")
    except BadInput as e:
        raise BadInput(f"{e}; give the --out folder of `squeeze plan`") from None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise BadInput(f"{path}: not JSON; give the plan.json `squeeze plan` wrote") from None
    if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT or set(doc) != KEYS:
        raise BadInput(f"{path}: not a {PLAN_FORMAT} document (it must have exactly the fields "
                       f"{', '.join(sorted(KEYS))})")
    context = doc["context"]
    if not isinstance(context, dict) or context.get("format") != plan_mod.FORMAT \
            or not isinstance(context.get("plan"), list) \
            or not isinstance(doc["code_checks"], list) \
            or len(doc["code_checks"]) != len(context["plan"]):
        raise BadInput(f"{path}: its context or code checks are malformed; make the plan again")
    if data.decode("utf-8") != canonical_text(doc):
        raise BadInput(f"{path}: not the bytes `squeeze plan` writes (edited?); make the plan "
                       "again")
    kind, section = plan_mod.unseen_section(context)
    fresh_set, held_out = None, None
    if kind == "fresh":
        revealed = seedsets.read_revealed(folder / FRESH_FILE)
        if fresh.commit(revealed.fresh) != section.get("commitment"):
            raise BadInput(f"{folder / FRESH_FILE}: its seeds and salt do not hash to the "
                           "plan's commitment; the plan folder was changed, make it again")
        fresh_set = revealed.fresh
    else:
        held_out = seedsets.read_commitment(folder / HELD_OUT_FILE)
        if held_out.record() != section:
            raise BadInput(f"{folder / HELD_OUT_FILE}: not the commitment the plan names")
    import hashlib

    return Plan(folder, hashlib.sha256(data).hexdigest(), doc, doc["allow_weak_seeds"] is True,
                fresh_set, held_out)


def follow(plan: Plan, job: Job, prepared: Any, sealed: Any) -> Planned:
    """Check that `job` is the job `plan` was made of (the job file, every controller's files,
    the recipes) and say what to fly and grade; BadInput naming what differs."""
    from plimsoll_ci.digests import practice_set_digest

    if job.sha256 != plan.doc["job"]["sha256"]:
        raise BadInput(f"{job.path}: not the job file the plan {plan.folder} was made of (its "
                       "digest differs); grade the job the plan was made of, or plan again")
    if plan.held_out is not None:
        if sealed is None:
            raise BadInput(f"the plan {plan.folder} is on a held-out set: give each shard "
                           "--sealed SET.commit --reveal SET.json (the commitment in the plan, "
                           f"{plan.held_out.digest[:16]}...)")
        if sealed.commitment.record() != plan.held_out.record():
            raise BadInput(f"--sealed: not the held-out set the plan {plan.folder} was made on "
                           f"(its commitment is {plan.held_out.digest[:16]}...)")
        unseen = Unseen(sealed.fresh, sealed.commitment)
    else:
        if sealed is not None:
            raise BadInput(f"the plan {plan.folder} drew a fresh set: --sealed goes to `squeeze "
                           "plan`, not to its shards")
        assert plan.fresh is not None  # (a plan holds its fresh set or its held-out one: `load`)
        unseen = Unseen(plan.fresh)
    context = plan.context
    made = _made(context)
    built = plan.folder / "built"
    paths = {plan_mod.built_id(g, i): built / g / str(i) for g, i in made}
    gradings = plan_mod.gradings(job, made)
    known = dict(zip(prepared.gradings, prepared.code_checks, strict=True))
    code = []
    for g in gradings:
        if g in known:
            code.append(known[g])
        elif paths[g.controller].is_dir():
            code.append(checks.check(checks.controller_files(paths[g.controller]), prepared.scan))
        else:
            raise BadInput(f"--plan {plan.folder}: {g.controller} is missing (the plan's built "
                           "rebuilds travel with it: copy the whole folder)")
    job_ctx = plan_mod.job_context(job, practice_set_digest(job.practice), unseen,
                                   prepared.recipes, prepared.practice_seed_tokens,
                                   recipes.ENCODING, made)
    if canonical.dumps(job_ctx) != canonical.dumps(context):
        differs = sorted(k for k in set(job_ctx) | set(context)
                         if job_ctx.get(k) != context.get(k))
        raise BadInput(f"{job.path}: the job differs from the plan {plan.folder} "
                       f"({', '.join(differs)}): a recipe or a controller list changed since; "
                       "plan again")
    for g, mine, theirs in zip(gradings, code, plan.doc["code_checks"], strict=True):
        if mine != theirs:
            raise BadInput(f"{g.controller}: its files are not the ones the plan's code checks "
                           "read (changed since the plan was made); grade the same checkout, "
                           "or plan again")
    where = [str(paths.get(g.controller) or job.base / g.controller) for g in gradings]
    work = plan_mod.Work(gradings, code, where, job_ctx, session_records(plan))
    return Planned(unseen, work)


def session_records(plan: Plan, trusted: tuple = ()) -> list[tuple[dict, dict]]:
    """The plan's rebuild-session records, verified, in plan order: under a pinned key when
    `trusted` (attest.pinned.Pinned) is given (a merge), else under the plan's own harness.pub."""
    from plimsoll_ci.attest import bundle, pinned
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE
    from plimsoll_ci.squeeze.records import signed_runs

    wanted = (plan.context.get("sessions") or {}).get("plan") or []
    if not wanted:
        return []
    path = plan.folder / artifacts.BUNDLE
    data = bundle.read_bundle(path, follow=False)
    if trusted:
        key, report = pinned.verify_pinned(data, trusted)
        if key is None or report is None:
            keyid = pinned.claimed_keyid(data)
            named = f"key sha256:{keyid}" if keyid else "a key it does not name"
            raise BadInput(f"{path}: signed by {named}, which is not a pinned key; "
                           "give the plan's public key with --pub FILE, taken from where the "
                           "plan was made, never from the plan's folder")
        under = key.line()
    else:
        public = load_public_key(plan.folder / artifacts.PUBLIC_KEY, follow=False)
        report = bundle.verify_bytes(data, public)
        under = str(plan.folder / artifacts.PUBLIC_KEY)
    if not report.ok:
        raise BadInput(f"{path}: does not verify under {under} ({report.problems[0]}); the "
                       "plan's session records cannot be used")
    found = []
    for one in signed_runs(data):
        ctx = one.result.get("squeeze") if isinstance(one.result, dict) else None
        if one.predicate_type != SESSION_PREDICATE_TYPE or not isinstance(ctx, dict) \
                or canonical.dumps(ctx.get("job")) != canonical.dumps(plan.context):
            raise BadInput(f"{path} line {one.line}: not a session record of this plan")
        found.append(one)
    keys = [[r.result["session"]["group"], r.result["session"]["index"]] for r in found]
    if keys != wanted:
        raise BadInput(f"{path}: holds sessions {keys}, the plan lists {wanted}")
    return [(r.result, r.predicate) for r in found]


# What `squeeze plan` writes at the top of a plan folder; a merge refuses anything else there.
PLAN_ENTRIES = frozenset({PLAN_FILE, FRESH_FILE, HELD_OUT_FILE, artifacts.PUBLIC_KEY,
                          artifacts.BUNDLE, artifacts.BUNDLE + ".lock", artifacts.RUN})
OUTPUTS = ("built", "requests")  # folders copied into a run graded from the plan
MAX_OUTPUT_FILE = 64 << 20  # one file of a built workspace or a recording
MAX_OUTPUTS = 1 << 30  # all of them together


def check_folder(plan: Plan) -> list[str]:
    """Problems with a plan folder's top level: an entry `squeeze plan` does not write, a link,
    or a special file (each named)."""
    import os

    problems = []
    for entry in sorted(os.scandir(plan.folder), key=lambda e: e.name):
        where = f"--plan {plan.folder}: {entry.name}"
        if entry.is_symlink():
            problems.append(f"{where}: a symbolic link (never followed); give the plan folder "
                            "as `squeeze plan` wrote it")
        elif entry.name in OUTPUTS:
            if not entry.is_dir(follow_symlinks=False):
                problems.append(f"{where}: not a folder")
        elif entry.name not in PLAN_ENTRIES:
            problems.append(f"{where}: not a file `squeeze plan` writes; give the plan folder "
                            "as it wrote it")
        elif not entry.is_file(follow_symlinks=False):
            problems.append(f"{where}: not a regular file (a device, FIFO or socket is never "
                            "read)")
    return problems


def _tree(root: Path, where: str, problems: list[str]) -> dict[str, Path]:
    """Every regular file under `root` by its path relative to it; a link or a special file is
    a problem (never followed, never read)."""
    import os

    found: dict[str, Path] = {}
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.is_symlink():
                problems.append(f"{where}/{rel}: a symbolic link (never followed)")
            elif entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                found[rel] = Path(entry.path)
            else:
                problems.append(f"{where}/{rel}: not a regular file (a device, FIFO or socket)")
    return found


def _recording_digest(files: dict[str, bytes]) -> str:
    """The recording's manifest digest, as `wall.manifest` computes it over a folder."""
    import hashlib

    lines = "".join(f"{rel}\0{hashlib.sha256(files[rel]).hexdigest()}\n" for rel in sorted(files))
    return hashlib.sha256(b"plimsoll-ci recording v1\x00" + lines.encode()).hexdigest()


def _named(sessions: list[tuple[dict, dict]]) -> tuple[dict[str, str], dict[str, str]]:
    """What the signed session records name: ({built file: sha256}, {recording: its digest})."""
    built: dict[str, str] = {}
    recorded: dict[str, str] = {}
    for result, _predicate in sessions:
        recorded[result["recording"]["folder"]] = result["recording"]["sha256"]
        if result.get("verdict") == "graded":
            for rel, sha in result["workspace"]["files"].items():
                built[f"{result['controller']}/{rel}"] = sha
    return built, recorded


def copy_outputs(plan: Plan, out: Path, sessions: list[tuple[dict, dict]]) -> None:
    """Copy into `out` what one runner would hold: the built rebuilds and the sessions'
    recordings, exactly the files the verified session records `sessions` name.

    Refused (BadInput, every problem at once, before anything is copied): a link anywhere under
    `built/` or `requests/` (never followed), a device, FIFO or socket, a file the records do not
    name, a named file missing or with other bytes, a file over `MAX_OUTPUT_FILE`.
    """
    import hashlib

    from plimsoll_ci.files import read_bounded

    built, recorded = _named(sessions)
    problems: list[str] = []
    found: dict[str, Path] = {}
    for name in OUTPUTS:
        top = plan.folder / name
        if top.is_symlink():
            problems.append(f"--plan {plan.folder}: {name} is a symbolic link (never followed)")
        elif top.is_dir():
            found |= {f"{name}/{rel}": p for rel, p in
                      _tree(top, f"--plan {plan.folder}: {name}", problems).items()}
    data: dict[str, bytes] = {}
    total = 0
    for rel, path in sorted(found.items()):
        try:
            data[rel] = read_bounded(path, MAX_OUTPUT_FILE, f"--plan {plan.folder}: {rel}", False)
        except BadInput as e:
            problems.append(str(e))
            continue
        total += len(data[rel])
        if total > MAX_OUTPUTS:
            raise BadInput(f"--plan {plan.folder}: built/ and requests/ hold more than the bound "
                           f"of {MAX_OUTPUTS >> 20} MiB; refused, nothing written")
    for rel in sorted(data):
        in_recording = next((f for f in recorded if rel.startswith(f + "/")), None)
        if rel in built:
            if hashlib.sha256(data[rel]).hexdigest() != built[rel]:
                problems.append(f"--plan {plan.folder}: {rel}: not the bytes its session's "
                                "signed record names (changed since the plan was made)")
        elif in_recording is None:
            problems.append(f"--plan {plan.folder}: {rel}: a file no signed session record "
                            "names (added after the plan was made); remove it")
    for rel in sorted(set(built) - set(data)):
        problems.append(f"--plan {plan.folder}: {rel}: missing (its session's record names it)")
    for folder, digest in sorted(recorded.items()):
        files = {k[len(folder) + 1:]: v for k, v in data.items() if k.startswith(folder + "/")}
        if _recording_digest(files) != digest and not (
                RECORDER_LOCK not in files  # empty, and left out by an artifact upload (hidden)
                and _recording_digest(files | {RECORDER_LOCK: b""}) == digest):
            problems.append(f"--plan {plan.folder}: {folder}: not the recording its session's "
                            "signed record names (a file added, changed or removed)")
    if problems:
        raise BadInput(f"--plan {plan.folder}: its built/ and requests/ refused, nothing "
                       "written:\n  " + "\n  ".join(problems))
    for rel, content in data.items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(content)
