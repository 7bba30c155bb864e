"""Run records: the grading-run predicate, the in-toto Statement v1 around it, and their checks.

One record per grading run. The Statement's subject is the SHA-256 of the result document's
canonical JSON bytes; the predicate (type `PREDICATE_TYPE`, v3) says what was graded, against which
seed sets, in which sandbox tier, under which CPU budget, when, and with which result:

    {
      "cpuBudget": {...},                                  # as the grader configured it
      "freshSetReveal": {"salt": hex, "seeds": ["decimal", ...]} | null,
      "inputs": {
        "controller": [{"path": "...", "sha256": hex}, ...],   # sorted by path
        "course": "...",
        "freshSet": {"commitment": hex} | null,                # drawn and committed in this run
        "practiceSet": {"sha256": hex} | null,
        "sealedSet": {"bits": 64, "commitment": hex, "committedOn": time, "count": n} | null
      },
      "result": {"sha256": hex},
      "run": {"finishedOn": "YYYY-MM-DDTHH:MM:SSZ", "startedOn": "..."},
      "sandbox": {"evidence": {...}, "provider": "...", "tier": "process|container|kernel|vm"},
      "sealedSetReveal": {"salt": hex, "seeds": ["decimal", ...]} | null,
      "seedCheck": {"allowWeak": bool, "findings": [{"count", "rule", "set"}],
                    "uncommitted": n} | null,
      "tool": {"name": "plimsoll-ci", "version": "..."}
    }

Seeds are decimal strings: RFC 8785 JSON carries no integer above 2**53 - 1, and seeds are 64-bit.
A sealed set is a held-out set committed before the grading (`plimsoll-ci seeds commit`): its
commitment was dated `committedOn`, not after `run.startedOn`. `seedCheck` says what the seed lint
found in the flown sets, whether weak seeds were allowed, and how many flights flew on seeds no
commitment covered (a seed file). v1 and v2 records (written before) have neither `sealedSet`,
`sealedSetReveal` nor `seedCheck`, and integer seeds in their reveals; they still verify.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from typing import Any, NamedTuple

from plimsoll_ci import digests
from plimsoll_ci.attest import canonical
from plimsoll_ci.digests import is_sha256_hex
from plimsoll_ci.digests import practice_set_digest as practice_set_digest  # its callers' name
from plimsoll_ci.errors import BadInput
from plimsoll_ci.tiers import TIERS  # weakest first
from plimsoll_ci.timestamps import is_utc_time, utc_text

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# v2 records are written in RFC 8785 canonical JSON (digests any JCS library recomputes); v1
# records, written before, used `canonical.dumps_v1` and still verify. The version is in the type.
# v3 (64-bit seeds as decimal strings, sealed sets, the seed check) is what is written now.
PREDICATE_TYPE = "https://plimsoll-ci.dev/grading-run/v3"
PREDICATE_TYPE_V2 = "https://plimsoll-ci.dev/grading-run/v2"
CHECKPOINT_TYPE = "https://plimsoll-ci.dev/bundle-checkpoint/v2"
PREDICATE_TYPE_V1 = "https://plimsoll-ci.dev/grading-run/v1"
CHECKPOINT_TYPE_V1 = "https://plimsoll-ci.dev/bundle-checkpoint/v1"
PREDICATE_TYPES = (PREDICATE_TYPE, PREDICATE_TYPE_V2, PREDICATE_TYPE_V1)
FORM_OF_TYPE = {PREDICATE_TYPE: canonical.JCS, PREDICATE_TYPE_V2: canonical.JCS,
                CHECKPOINT_TYPE: canonical.JCS, PREDICATE_TYPE_V1: canonical.V1,
                CHECKPOINT_TYPE_V1: canonical.V1}
RESULT_NAME = "grading-result.json"
CHECKPOINT_SUBJECT = "bundle-head"


def result_digest(result_doc: Any) -> str:
    """SHA-256 (hex) of the result document's RFC 8785 canonical JSON (the Statement's subject)."""
    try:
        return hashlib.sha256(canonical.dumps(result_doc)).hexdigest()
    except ValueError as e:
        raise BadInput(f"result document: cannot be written as canonical JSON ({e})") from None


class RunFacts(NamedTuple):
    """What a grading-run predicate records: `make_predicate` takes these fields by keyword."""

    result_doc: Mapping[str, Any]
    controller_files: Mapping[str, str]
    course: str
    provider: str
    tier: str
    evidence: Mapping[str, Any]
    cpu_budget: Mapping[str, Any]
    started: dt.datetime | str
    finished: dt.datetime | str
    practice_set_digest: str | None = None
    fresh_commitment: str | None = None
    fresh_reveal: Mapping[str, Any] | None = None
    sealed_set: Mapping[str, Any] | None = None
    sealed_reveal: Mapping[str, Any] | None = None
    seed_check: Mapping[str, Any] | None = None
    tool_version: str | None = None


def make_predicate(**facts: Any) -> dict[str, Any]:
    """The grading-run predicate; checks what it can so a bad record is never signed.

    `controller_files` maps each controller file's path to the SHA-256 (hex) the trusted side
    computed; `fresh_commitment` / `fresh_reveal` come from `plimsoll_ci.digests.commit` and
    `.reveal` and must match; `sealed_set` / `sealed_reveal` from a `grading.seedsets.SealedSet`
    (`.commitment.record()`, `digests.reveal(.fresh)`) and must match, the commitment dated no later
    than `started`; `seed_check` from `grading.seedlint.SeedCheck.record()`; `started` /
    `finished` are aware datetimes or `...Z` strings. The keywords are `RunFacts`' fields (a
    missing or unknown one is a TypeError).
    """
    (result_doc, controller_files, course, provider, tier, evidence, cpu_budget, started,
     finished, practice_set_digest, fresh_commitment, fresh_reveal, sealed_set, sealed_reveal,
     seed_check, tool_version) = RunFacts(**facts)
    if tool_version is None:
        from plimsoll_ci import __version__ as tool_version
    files = []
    for path, digest in sorted(controller_files.items()):
        if not is_sha256_hex(digest):
            raise BadInput(f"controller file {path}: digest is not a SHA-256 in lowercase hex")
        files.append({"path": path, "sha256": digest})
    if tier not in TIERS:
        raise BadInput(f"tier {tier!r}: not one of {', '.join(TIERS)}")
    if practice_set_digest is not None and not is_sha256_hex(practice_set_digest):
        raise BadInput("practice set digest: not a SHA-256 in lowercase hex")
    for what, committed, revealed in (("fresh set", fresh_commitment, fresh_reveal),
                                      ("sealed set", sealed_set, sealed_reveal)):
        if committed is None and revealed is not None:
            raise BadInput(f"{what}: a reveal without a commitment; pass its commitment too")
        if committed is not None and revealed is None:
            raise BadInput(f"{what}: committed but not revealed; pass its reveal after grading")
    start, end = utc_text(started, "start time"), utc_text(finished, "end time")
    if end < start:
        raise BadInput(f"run times: finished {end} is before started {start}")
    predicate = {
        "cpuBudget": dict(cpu_budget),
        "freshSetReveal": None if fresh_reveal is None else _copy(fresh_reveal),
        "inputs": {
            "controller": files,
            "course": course,
            "freshSet": None if fresh_commitment is None else {"commitment": fresh_commitment},
            "practiceSet": None if practice_set_digest is None else {"sha256": practice_set_digest},
            "sealedSet": None if sealed_set is None else dict(sealed_set),
        },
        "result": {"sha256": result_digest(result_doc)},
        "run": {"finishedOn": end, "startedOn": start},
        "sandbox": {"evidence": dict(evidence), "provider": provider, "tier": tier},
        "sealedSetReveal": None if sealed_reveal is None else _copy(sealed_reveal),
        "seedCheck": None if seed_check is None else _copy(seed_check),
        "tool": {"name": "plimsoll-ci", "version": tool_version},
    }
    problems = check_predicate(predicate)
    if problems:
        raise BadInput(f"run record: {problems[0]}")
    problems = check_seed_sets(predicate)
    if problems:
        raise BadInput(f"{problems[0]}; refusing to sign")
    return predicate


def _copy(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in doc.items()}


def make_statement(result_doc: Any, predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 for one run; the predicate's result digest must match."""
    digest = result_digest(result_doc)
    if predicate.get("result", {}).get("sha256") != digest:
        raise BadInput("run record: the predicate's result digest is not this result's digest")
    return {
        "_type": STATEMENT_TYPE,
        "predicate": dict(predicate),
        "predicateType": PREDICATE_TYPE,
        "subject": [{"digest": {"sha256": digest}, "name": RESULT_NAME}],
    }


def make_checkpoint(count: int, head: str) -> dict[str, Any]:
    """The checkpoint Statement: `count` records, the last one's line digest `head`."""
    return {
        "_type": STATEMENT_TYPE,
        "predicate": {"count": count},
        "predicateType": CHECKPOINT_TYPE,
        "subject": [{"digest": {"sha256": head}, "name": CHECKPOINT_SUBJECT}],
    }


def _keys(obj: Any, keys: set[str], where: str, problems: list[str]) -> bool:
    if not isinstance(obj, dict):
        problems.append(f"{where} is not an object")
        return False
    if set(obj) != keys:
        problems.append(f"{where} must have exactly the fields {', '.join(sorted(keys))}")
        return False
    return True


def statement_subject(
    statement: Any, predicate_types: str | tuple[str, ...], name: str
) -> tuple[str | None, list[str]]:
    """Check a Statement's frame (type, one of `predicate_types`, one named subject); its subject
    digest."""
    problems: list[str] = []
    if isinstance(predicate_types, str):
        predicate_types = (predicate_types,)
    if not _keys(statement, {"_type", "predicate", "predicateType", "subject"}, "statement", problems):
        return None, problems
    if statement["_type"] != STATEMENT_TYPE:
        problems.append(f"statement _type is not {STATEMENT_TYPE}")
    if statement["predicateType"] not in predicate_types:
        problems.append(f"predicate type is not {' or '.join(predicate_types)}")
    subject = statement["subject"]
    if not isinstance(subject, list) or len(subject) != 1:
        problems.append("statement must have exactly one subject")
        return None, problems
    if not _keys(subject[0], {"digest", "name"}, "subject", problems):
        return None, problems
    if subject[0]["name"] != name:
        problems.append(f"subject name is not {name}")
    digest = subject[0]["digest"]
    if not _keys(digest, {"sha256"}, "subject digest", problems) or not is_sha256_hex(
        digest["sha256"]
    ):
        if not problems:
            problems.append("subject digest is not a SHA-256 in lowercase hex")
        return None, problems
    return digest["sha256"], problems


def check_predicate(pred: Any, predicate_type: str = PREDICATE_TYPE) -> list[str]:
    """Every way `pred` departs from the shape of a grading-run predicate of `predicate_type`
    (empty when it fits)."""
    p: list[str] = []
    v3 = predicate_type == PREDICATE_TYPE
    top = {"cpuBudget", "freshSetReveal", "inputs", "result", "run", "sandbox", "tool"}
    if v3:
        top |= {"sealedSetReveal", "seedCheck"}
    if not _keys(pred, top, "predicate", p):
        return p
    if not isinstance(pred["cpuBudget"], dict):
        p.append("cpuBudget is not an object")
    inputs = pred["inputs"]
    wanted = {"controller", "course", "freshSet", "practiceSet"} | ({"sealedSet"} if v3 else set())
    if _keys(inputs, wanted, "inputs", p):
        files = inputs["controller"]
        if not isinstance(files, list) or not files:
            p.append("inputs.controller must list the controller's files")
        else:
            paths = []
            for f in files:
                if _keys(f, {"path", "sha256"}, "controller file", p):
                    if not isinstance(f["path"], str) or not is_sha256_hex(f["sha256"]):
                        p.append("controller file needs a path and a SHA-256 in lowercase hex")
                    paths.append(f["path"])
            if all(isinstance(x, str) for x in paths) and paths != sorted(set(paths)):
                p.append("controller files must be sorted by path, each once")
        if not isinstance(inputs["course"], str) or not inputs["course"]:
            p.append("inputs.course must name the course")
        if inputs["practiceSet"] is not None:
            if _keys(inputs["practiceSet"], {"sha256"}, "inputs.practiceSet", p):
                if not is_sha256_hex(inputs["practiceSet"]["sha256"]):
                    p.append("practice set digest is not a SHA-256 in lowercase hex")
        if inputs["freshSet"] is not None:
            if _keys(inputs["freshSet"], {"commitment"}, "inputs.freshSet", p):
                if not is_sha256_hex(inputs["freshSet"]["commitment"]):
                    p.append("fresh set commitment is not a SHA-256 in lowercase hex")
        if v3 and inputs["sealedSet"] is not None:
            _check_sealed_set(inputs["sealedSet"], p)
    if v3 and pred["seedCheck"] is not None:
        _check_seed_check(pred["seedCheck"], p)
    if _keys(pred["result"], {"sha256"}, "result", p) and not is_sha256_hex(pred["result"]["sha256"]):
        p.append("result digest is not a SHA-256 in lowercase hex")
    _check_run(pred["run"], p)
    sandbox = pred["sandbox"]
    if _keys(sandbox, {"evidence", "provider", "tier"}, "sandbox", p):
        if sandbox["tier"] not in TIERS:
            p.append(f"sandbox tier is not one of {', '.join(TIERS)}")
        if not isinstance(sandbox["provider"], str) or not sandbox["provider"]:
            p.append("sandbox provider must be named")
        if not isinstance(sandbox["evidence"], dict):
            p.append("sandbox evidence is not an object")
    tool = pred["tool"]
    if _keys(tool, {"name", "version"}, "tool", p):
        if tool["name"] != "plimsoll-ci" or not isinstance(tool["version"], str):
            p.append("tool must be plimsoll-ci with a version string")
    return p


def _check_sealed_set(sealed: Any, p: list[str]) -> None:
    if not _keys(sealed, {"bits", "commitment", "committedOn", "count"}, "inputs.sealedSet", p):
        return
    if not is_sha256_hex(sealed["commitment"]):
        p.append("sealed set commitment is not a SHA-256 in lowercase hex")
    if type(sealed["bits"]) is not int or not 1 <= sealed["bits"] <= 64:
        p.append("sealed set bits must be an integer 1..64")
    if type(sealed["count"]) is not int or sealed["count"] < 1:
        p.append("sealed set count must be a positive integer")
    if not is_utc_time(sealed["committedOn"]):
        p.append("sealed set committedOn must be a UTC time like 2026-01-31T12:00:00Z")


def _check_seed_check(check: Any, p: list[str]) -> None:
    if not _keys(check, {"allowWeak", "findings", "uncommitted"}, "seedCheck", p):
        return
    if type(check["allowWeak"]) is not bool:
        p.append("seedCheck.allowWeak must be true or false")
    if type(check["uncommitted"]) is not int or check["uncommitted"] < 0:
        p.append("seedCheck.uncommitted must be a count of flights")
    findings = check["findings"]
    if not isinstance(findings, list):
        p.append("seedCheck.findings must be a list")
        return
    for f in findings:
        if not _keys(f, {"count", "rule", "set"}, "seedCheck finding", p):
            return
        if (type(f["count"]) is not int or f["count"] < 1 or not isinstance(f["rule"], str)
                or not isinstance(f["set"], str)):
            p.append("seedCheck finding needs a set, a rule and a positive count")
            return


def check_seed_sets(pred: Mapping[str, Any],
                    predicate_type: str = PREDICATE_TYPE) -> list[str]:
    """Whether a (well-shaped) predicate's reveals match their commitments, and a sealed set was
    committed no later than the grading started."""
    integers = predicate_type != PREDICATE_TYPE  # v1 and v2 reveals hold JSON integers
    problems = []
    committed = pred["inputs"]["freshSet"]
    revealed = pred["freshSetReveal"]
    if committed is None and revealed is not None:
        problems.append("fresh set revealed but never committed to")
    elif committed is not None and revealed is None:
        problems.append("fresh set committed to but never revealed")
    elif committed is not None and not digests.check_reveal(committed["commitment"], revealed,
                                                          integers):
        problems.append("fresh set reveal does not match its commitment")
    if predicate_type != PREDICATE_TYPE:
        return problems
    sealed, revealed = pred["inputs"]["sealedSet"], pred["sealedSetReveal"]
    if sealed is None:
        if revealed is not None:
            problems.append("sealed set revealed but never committed to")
        return problems
    if revealed is None:
        return [*problems, "sealed set committed to but never revealed"]
    try:
        seeds = digests.from_reveal(revealed).seeds
    except ValueError as e:
        return [*problems, f"sealed set reveal: {e}"]
    if not digests.check_reveal(sealed["commitment"], revealed):
        problems.append("sealed set reveal does not match its commitment")
    if len(seeds) != sealed["count"]:
        problems.append(f"sealed set reveal holds {len(seeds)} seeds, the commitment "
                        f"{sealed['count']}")
    if any(s >= 2 ** sealed["bits"] for s in seeds):
        problems.append(f"sealed set reveal holds seeds beyond its committed {sealed['bits']} bits")
    if sealed["committedOn"] > pred["run"]["startedOn"]:
        problems.append(f"sealed set committed on {sealed['committedOn']}, after the grading "
                        f"started ({pred['run']['startedOn']}): a commitment must come first")
    return problems


def check_fresh_set(pred: Mapping[str, Any], predicate_type: str = PREDICATE_TYPE) -> list[str]:
    """`check_seed_sets` (its former name, kept for callers of the v2 API)."""
    return check_seed_sets(pred, predicate_type)


# ---- rebuild sessions (the squeeze's rebuilds made through a model) -------------------------------
#
# One record per session, in the same bundle as the gradings. The subject is the SHA-256 of the
# session document (RFC 8785), named `rebuild-session.json`; the predicate names by digest what
# the session was given and what it made:
#
#     {
#       "brief": {"sha256": hex},                       # the system and user messages it started on
#       "controller": {"sha256": hex} | null,           # of the workspace's files, when it wrote any
#       "model": {"name": "...", "baseUrl": "..."},
#       "recipe": {"sha256": hex} | null,               # null for the control group
#       "recording": {"requests": N, "sha256": hex},    # of the recorded requests' manifest
#       "result": {"sha256": hex},
#       "run": {"finishedOn": "...", "startedOn": "..."},
#       "session": {"group": "...", "index": N},
#       "tokens": N,
#       "tool": {"name": "plimsoll-ci", "version": "..."},
#       "tools": [{"arguments": {"sha256": hex}, "name": "write_file|run_code|fly|..."}, ...],
#       "transcript": {"sha256": hex}
#     }

SESSION_PREDICATE_TYPE = "https://plimsoll-ci.dev/rebuild-session/v1"
SESSION_NAME = "rebuild-session.json"
FORM_OF_TYPE[SESSION_PREDICATE_TYPE] = canonical.JCS
_SESSION_KEYS = {"brief", "controller", "model", "recipe", "recording", "result", "run",
                 "session", "tokens", "tool", "tools", "transcript"}


def make_session_predicate(*, result_doc: Mapping[str, Any], started: dt.datetime | str,
                           finished: dt.datetime | str, **fields: Any) -> dict[str, Any]:
    """The rebuild-session predicate over `result_doc`; `fields` are the predicate's other keys
    (brief, controller, model, recipe, recording, session, tokens, tools, transcript). BadInput
    naming the first problem, so a bad record is never signed."""
    from plimsoll_ci import __version__

    predicate = {**fields, "result": {"sha256": result_digest(result_doc)},
                 "run": {"finishedOn": utc_text(finished, "end time"),
                         "startedOn": utc_text(started, "start time")},
                 "tool": {"name": "plimsoll-ci", "version": __version__}}
    problems = check_session_predicate(predicate)
    if problems:
        raise BadInput(f"session record: {problems[0]}")
    return predicate


def _check_run(run: Any, p: list[str]) -> None:
    """A record's run: UTC start and finish times, the finish not before the start."""
    if _keys(run, {"finishedOn", "startedOn"}, "run", p):
        if not (is_utc_time(run["startedOn"]) and is_utc_time(run["finishedOn"])):
            p.append("run times must be UTC times like 2026-01-31T12:00:00Z")
        elif run["finishedOn"] < run["startedOn"]:
            p.append("run finished before it started")


def _digest_field(obj: Any, where: str, p: list[str], nullable: bool = False) -> None:
    if obj is None and nullable:
        return
    if _keys(obj, {"sha256"}, where, p) and not is_sha256_hex(obj["sha256"]):
        p.append(f"{where} is not a SHA-256 in lowercase hex")


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def check_session_predicate(pred: Any) -> list[str]:
    """Every way `pred` departs from the rebuild-session predicate's shape (empty when it fits)."""
    p: list[str] = []
    if not _keys(pred, _SESSION_KEYS, "predicate", p):
        return p
    for name in ("brief", "result", "transcript"):
        _digest_field(pred[name], name, p)
    for name in ("controller", "recipe"):
        _digest_field(pred[name], name, p, nullable=True)
    if _keys(pred["model"], {"name", "baseUrl"}, "model", p) and not (
            isinstance(pred["model"]["name"], str) and pred["model"]["name"]
            and isinstance(pred["model"]["baseUrl"], str)):
        p.append("model must name the model and its base URL")
    rec = pred["recording"]
    if _keys(rec, {"requests", "sha256"}, "recording", p) and not (
            _count(rec["requests"]) and is_sha256_hex(rec["sha256"])):
        p.append("recording needs a request count and a SHA-256 in lowercase hex")
    s = pred["session"]
    if _keys(s, {"group", "index"}, "session", p) and not (
            isinstance(s["group"], str) and s["group"] and type(s["index"]) is int
            and s["index"] >= 1):
        p.append("session needs its group's name and an index from 1")
    if not _count(pred["tokens"]):
        p.append("tokens must be a count")
    tools = pred["tools"]
    if not isinstance(tools, list):
        p.append("tools must list the tool calls")
    else:
        for call in tools:
            if _keys(call, {"arguments", "name"}, "tool call", p):
                if not isinstance(call["name"], str):
                    p.append("tool call needs a name")
                _digest_field(call["arguments"], "tool call arguments", p)
    _check_run(pred["run"], p)
    tool = pred["tool"]
    if _keys(tool, {"name", "version"}, "tool", p) and (
            tool["name"] != "plimsoll-ci" or not isinstance(tool["version"], str)):
        p.append("tool must be plimsoll-ci with a version string")
    return p


def make_session_statement(result_doc: Any, predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 for one rebuild session."""
    digest = result_digest(result_doc)
    if predicate.get("result", {}).get("sha256") != digest:
        raise BadInput("session record: the predicate's result digest is not this session's")
    return {"_type": STATEMENT_TYPE, "predicate": dict(predicate),
            "predicateType": SESSION_PREDICATE_TYPE,
            "subject": [{"digest": {"sha256": digest}, "name": SESSION_NAME}]}
