"""The squeeze's signed records, read back from a bundle and checked against each other.

`read(data, public)` verifies the bundle (signatures, chain, checkpoint, each fresh reveal against
its commitment: `plimsoll_ci.attest.bundle`), then checks what the squeeze adds on top, every
problem at once, each at its bundle line:

- every record carries a squeeze context, all of them the same job section;
- its predicate names the practice set and the unseen set that job section names: the fresh
  commitment, or the held-out set's earlier commitment (`held_out`), with the same reveal and the
  same seed check (`seedCheck`: whether weak seeds were allowed) as every other record;
- it flew exactly the practice flights (`practice:1..n`, values unshown) then exactly the unseen
  flights (`fresh:1..m`, the revealed seeds in order; or `sealed:1..m`, values unshown), and its
  totals add up;
- the controller files it names are the files its code checks read;
- its grading is one of the plan's, and no grading is there twice; none is missing;
- a job that builds: every session of its plan has one rebuild-session record carrying the same
  job section, whose predicate states what its document states; a session is graded exactly when
  its record says so, and the files graded are the files its workspace held.

The verdicts, evidence and reports are computed from what this returns, and from nothing else.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from plimsoll_ci.attest import bundle, canonical
from plimsoll_ci.attest.keys import PublicKey
from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE
from plimsoll_ci.squeeze.plan import FORMAT, ROLES, Grading, built_id, unseen_section


class Score(NamedTuple):
    """Landed flights out of total."""

    landed: int
    total: int


class GradingRecord(NamedTuple):
    """What one signed record says, as the squeeze uses it."""

    line: int
    result_sha256: str
    grading: Grading
    practice: Score
    fresh: Score
    not_landed: dict[str, int]  # reason -> flights (practice and fresh)
    code_checks: dict[str, Any]
    provider: str
    tier: str
    started: str = ""  # run.startedOn: when its grading started (after any commitment)


class SessionRecord(NamedTuple):
    """What one signed rebuild-session record says, as the squeeze uses it."""

    line: int
    result_sha256: str
    group: str
    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    ended: str  # answered | max_turns | budget | rate_limit | error | interrupted
    verdict: str  # graded | refused | no_controller | stopped
    tokens: int
    files: dict[str, str]  # the workspace's files: path -> sha256
    carries: list[str]  # what the workspace scan found ("path:line entry")
    hits: int  # tripwire hits (a run with any grades nothing)


class Read(NamedTuple):
    """The records of a squeeze bundle, in plan order, and every problem found."""

    records: list[GradingRecord]
    job: dict[str, Any] | None  # the job section all records share
    reveal: dict[str, Any] | None  # the unseen set's reveal all records share
    problems: list[str]  # "bundle line N: ..." or "bundle: ..."
    # records in the bundle
    count: int  # type: ignore[assignment]  # shadows tuple.count, on purpose
    sessions: list[SessionRecord] = []  # rebuild sessions, in plan order
    seed_check: dict[str, Any] | None = None  # the seed lint's record all gradings share


def _statement(raw: bytes) -> tuple[dict, dict]:
    doc = canonical.loads(raw)
    payload = canonical.b64decode(doc["envelope"]["payload"])
    return doc, canonical.loads(payload)


class SignedRun(NamedTuple):
    """One record line of a verified bundle, as a merge signs it again."""

    line: int
    predicate_type: str
    result: Any  # the result document
    predicate: dict[str, Any]
    statement: bytes  # the signed payload: the in-toto statement's exact bytes


def signed_runs(data: bytes) -> list[SignedRun]:
    """The record lines of a bundle that verified (`bundle.verify_bytes`), checkpoint left out."""
    out = []
    for n, raw in enumerate(data.split(b"\n")[:-1][:-1], 1):
        doc = canonical.loads(raw)
        payload = canonical.b64decode(doc["envelope"]["payload"])
        statement = canonical.loads(payload)
        out.append(SignedRun(n, statement["predicateType"], doc["result"],
                             statement["predicate"], payload))
    return out


def read(data: bytes, public: PublicKey) -> Read:
    """Verify a squeeze bundle's bytes and read its records (see the module doc)."""
    report = bundle.verify_bytes(data, public)
    problems = [str(p) for p in report.problems]
    if problems:
        return Read([], None, None, problems, report.count)
    lines = data.split(b"\n")[:-1][:-1]  # drop the final newline's empty piece, then the checkpoint
    job: dict | None = None
    job_line = 0
    reveal: dict | None = None
    seed_check: Any = False  # False: no grading read yet (None is a record without one)
    found: dict[Grading, GradingRecord] = {}
    made: dict[tuple[str, int], SessionRecord] = {}
    for n, raw in enumerate(lines, 1):
        where = f"bundle line {n}"
        doc, statement = _statement(raw)
        predicate, result = statement["predicate"], doc["result"]
        if statement["predicateType"] == SESSION_PREDICATE_TYPE:
            ctx = result.get("squeeze") if isinstance(result, dict) else None
            if job is None and isinstance(ctx, dict) and isinstance(ctx.get("job"), dict) \
                    and ctx["job"].get("format") == FORMAT:
                job, job_line = ctx["job"], n
            one, why = _session(n, result, predicate, job, job_line)
            problems += [f"{where}: {w}" for w in why]
            if one is not None and (one.group, one.index) in made:
                problems.append(f"{where}: session {one.group}/{one.index} was already recorded "
                                f"on line {made[(one.group, one.index)].line}")
            elif one is not None:
                made[(one.group, one.index)] = one
            continue
        ctx = result.get("squeeze") if isinstance(result, dict) else None
        if not isinstance(ctx, dict) or not isinstance(ctx.get("job"), dict) \
                or ctx["job"].get("format") != FORMAT:
            problems.append(f"{where}: not a squeeze record (no {FORMAT} context)")
            continue
        if job is None:
            job, job_line = ctx["job"], n
        elif canonical.dumps(ctx["job"]) != canonical.dumps(job):
            problems.append(f"{where}: its job section differs from line {job_line}'s (records "
                            "of two runs mixed?)")
            continue
        if reveal is None:
            reveal = _revealed(predicate, job)
        if seed_check is False:
            seed_check = predicate.get("seedCheck")
        elif predicate.get("seedCheck") != seed_check:
            problems.append(f"{where}: its seed check differs from the other records' (records "
                            "of two runs mixed?)")
        rec, why = _record(n, result, predicate, ctx, job, reveal)
        problems += [f"{where}: {w}" for w in why]
        if rec is None:
            continue
        if rec.grading in found:
            problems.append(f"{where}: {rec.grading.label()} was already graded on line "
                            f"{found[rec.grading].line}")
            continue
        found[rec.grading] = rec
    plan = [Grading(*g) for g in job["plan"]] if job else []
    for g in plan:
        if g not in found:
            problems.append(f"bundle: no record for {g.label()} (the run did not finish, or a "
                            "record was removed)")
    ordered = [found[g] for g in plan if g in found]
    planned = [tuple(x) for x in ((job or {}).get("sessions") or {}).get("plan", [])]
    for key in planned:
        if key not in made:
            problems.append(f"bundle: no record of session {key[0]}/{key[1]} (the run did not "
                            "finish, or a record was removed)")
    problems += _graded_as_built(made, found)
    done = [made[k] for k in planned if k in made]
    return Read(ordered, job, reveal, problems, report.count, done,
                None if seed_check is False else seed_check)


def _revealed(predicate: dict, job: dict) -> Any:
    """The reveal of the job's unseen set that a grading predicate carries."""
    kind, _section = unseen_section(job)
    return predicate["freshSetReveal"] if kind == "fresh" else predicate["sealedSetReveal"]


def _session(n: int, result: Any, predicate: dict, job: dict | None,
             job_line: int) -> tuple[SessionRecord | None, list[str]]:
    """One rebuild-session record, checked against the job section and its own predicate."""
    ctx = result.get("squeeze") if isinstance(result, dict) else None
    if not isinstance(ctx, dict) or job is None or \
            canonical.dumps(ctx.get("job")) != canonical.dumps(job):
        return None, [f"its job section differs from line {job_line}'s (records of two runs "
                      "mixed?)" if job is not None else f"not a squeeze session (no {FORMAT} "
                      "context)"]
    try:
        s = result["session"]
        key = (s["group"], s["index"])
        one = SessionRecord(n, predicate["result"]["sha256"], s["group"], s["index"],
                            result["ended"], result["verdict"], result["tokens"],
                            dict(result["workspace"]["files"]),
                            list(result["workspace"]["carries"]), len(result["wall"]["hits"]))
    except (KeyError, TypeError):
        return None, ["its session document lacks a field the squeeze reads"]
    why = []
    if [key[0], key[1]] not in ((job.get("sessions") or {}).get("plan") or []):
        return None, [f"session {key[0]}/{key[1]} is not in the job's plan"]
    same = {
        "session": {"group": key[0], "index": key[1]},
        "tokens": result["tokens"],
        "brief": result.get("brief"), "recipe": result.get("recipe"),
        "transcript": result.get("transcript"),
        "recording": {"requests": result["recording"]["requests"],
                      "sha256": result["recording"]["sha256"]},
        "tools": [{"arguments": {"sha256": c["arguments_sha256"]}, "name": c["name"]}
                  for c in result.get("tools", [])],
    }
    for k, want in same.items():
        if predicate.get(k) != want:
            why.append(f"session {key[0]}/{key[1]}: its signed {k} is not what its document says")
    graded = one.verdict == "graded"
    if graded != (result.get("controller") == built_id(*key)) or \
            (graded and (one.carries or one.ended in ("budget", "rate_limit", "error"))):
        why.append(f"session {key[0]}/{key[1]}: verdict {one.verdict!r} does not follow from "
                   "how it ended and what its workspace carries")
    return one, why


def _graded_as_built(made: dict[tuple[str, int], SessionRecord],
                     found: dict[Grading, GradingRecord]) -> list[str]:
    """Every graded session was graded, on exactly its workspace's files; nothing else was."""
    problems = []
    for (group, index), one in made.items():
        key = Grading(group, "control" if group == "control" else "rebuild",
                      built_id(group, index))
        rec = found.get(key)
        if one.verdict == "graded" and rec is not None and \
                rec.code_checks.get("files") != one.files:
            problems.append(f"bundle line {rec.line}: {key.label()} graded other files than its "
                            f"session's workspace (line {one.line})")
        if one.verdict != "graded" and rec is not None:
            problems.append(f"bundle line {rec.line}: {key.label()} was graded, but its session "
                            f"(line {one.line}) was {one.verdict}")
    return problems


def _record(n: int, result: dict, predicate: dict, ctx: dict, job: dict,
            reveal: dict | None) -> tuple[GradingRecord | None, list[str]]:
    why: list[str] = []
    inputs = predicate["inputs"]
    if (inputs["practiceSet"] or {}).get("sha256") != job["practice"]["sha256"]:
        why.append("its practice set is not the one the job section names")
    kind, section = unseen_section(job)
    if kind == "fresh":
        if (inputs["freshSet"] or {}).get("commitment") != section.get("commitment") \
                or inputs["sealedSet"] is not None:
            why.append("its fresh set is not the one the run committed to")
    elif inputs["sealedSet"] != section or inputs["freshSet"] is not None:
        why.append("its held-out set is not the one the job section names (committed earlier)")
    if _revealed(predicate, job) != reveal:
        why.append("its reveal differs from the other records'")
    if inputs["course"] != job["course"] or result.get("course") != job["course"]:
        why.append(f"its course is not the job's ({job['course']})")
    g: Any = ctx.get("grading")  # any shape: refused below when it names no grading
    try:
        grading = Grading(g["group"], g["role"], g["controller"])
    except (TypeError, KeyError):
        return None, [*why, "its squeeze context names no grading"]
    if grading.role not in ROLES or list(grading) not in job["plan"]:
        return None, [*why, f"{grading.label()} is not in the job's plan"]
    checks = ctx.get("code_checks")
    files = {f["path"]: f["sha256"] for f in inputs["controller"]}
    if not isinstance(checks, dict) or checks.get("files") != files:
        why.append("the controller files it graded are not the files its code checks read")
    scores = _scores(result, job, reveal, why)
    if scores is None:
        return None, why
    practice, fresh, not_landed = scores
    return GradingRecord(n, predicate["result"]["sha256"], grading, practice, fresh, not_landed,
                         checks if isinstance(checks, dict) else {}, predicate["sandbox"]["provider"],
                         predicate["sandbox"]["tier"], predicate["run"]["startedOn"]), why


def _scores(result: dict, job: dict, reveal: dict | None,
            why: list[str]) -> tuple[Score, Score, dict[str, int]] | None:
    flights = result.get("flights")
    kind, section = unseen_section(job)
    n, m = job["practice"]["count"], section["count"]  # (the job as our run signed it)
    shown = kind == "fresh"
    prefix, what = ("fresh", "fresh") if shown else ("sealed", "held-out")
    if not isinstance(flights, list) or len(flights) != n + m:
        why.append(f"it flew {len(flights) if isinstance(flights, list) else 'no'} flights, "
                   f"not the {n} practice and {m} {what} flights of the job")
        return None
    seeds = ((reveal or {}).get("seeds") or []) if shown else []
    bad = []
    for i, f in enumerate(flights):
        if not isinstance(f, dict) or not isinstance(f.get("landed"), bool) \
                or not isinstance(f.get("reason"), str):
            bad.append(f"flight {i + 1} is malformed")
            continue
        if i < n:
            want_id, want_seed = f"practice:{i + 1}", None
        else:
            want_id = f"{prefix}:{i - n + 1}"
            want_seed = (seeds[i - n] if i - n < len(seeds) else -1) if shown else None
        if f.get("id") != want_id:
            bad.append(f"flight {i + 1} is {str(f.get('id'))[:40]!r}, not {want_id}")
        elif f.get("seed") != want_seed:  # never say which value it was
            bad.append(f"flight {i + 1} ({want_id}) " + (
                "flew a seed other than the revealed one" if i >= n and shown
                else f"shows a seed value ({'practice' if i < n else what} seeds are flown "
                "unshown)"))
    if bad:
        why.append("; ".join(bad[:3]) + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""))
        return None
    landed = sum(f["landed"] for f in flights)
    if result.get("landed") != landed or result.get("total") != len(flights):
        why.append("its landed / total do not add up from its flights")
    practice = Score(sum(f["landed"] for f in flights[:n]), n)
    fresh = Score(sum(f["landed"] for f in flights[n:]), m)
    not_landed = Counter(f["reason"] for f in flights if not f["landed"])
    return practice, fresh, dict(sorted(not_landed.items()))
