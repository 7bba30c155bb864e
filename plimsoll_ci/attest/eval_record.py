"""Eval-attempt records: one signed record per coding-model attempt (`plimsoll-ci eval run`).

The Statement's subject is the SHA-256 of the attempt's result document (its entry of
`results.json`, RFC 8785 canonical JSON), named `eval-attempt.json`; the predicate (type
`PREDICATE_TYPE`) says which model tried which task on which copy, in which sandbox, and names by
digest everything the scores rest on:

    {
      "attempt": {"model": "...", "run": N, "task": "..."},
      "inputs": {"allowlist": [...], "repository": {"files": N, "sha256": hex},
                 "task": {"probe": bool, "sha256": hex, "test": [...], "touch": [...]},
                 "turns": N},
      "model": {"baseUrl": "...", "stopped": null | "budget" | "rate_limit" | "error",
                "tokens": N, "transcript": {"sha256": hex}},
      "outcome": {"diff": {"sha256": hex}, "finalTree": {"sha256": hex},
                  "guardedTest": {"exitCode": N, "output": {"sha256": hex}}},
      "result": {"sha256": hex},
      "run": {"finishedOn": "YYYY-MM-DDTHH:MM:SSZ", "startedOn": "..."},
      "sandbox": {"evidence": {...}, "provider": "...", "tier": "process|container|kernel|vm"},
      "tool": {"name": "plimsoll-ci", "version": "..."}
    }

Records of this type sit in the same bundles as grading records and `plimsoll-ci verify` checks
them the same way (signature, chain, checkpoint, canonical form, and this shape).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from plimsoll_ci.attest import record
from plimsoll_ci.digests import is_sha256_hex
from plimsoll_ci.errors import BadInput
from plimsoll_ci.tiers import TIERS
from plimsoll_ci.timestamps import is_utc_time, utc_text

PREDICATE_TYPE = "https://plimsoll-ci.dev/eval-attempt/v1"
RESULT_NAME = "eval-attempt.json"
STOPS = (None, "budget", "rate_limit", "error", "time_limit", "tool_calls")


class AttemptFacts(NamedTuple):
    """What an eval-attempt predicate records: `make_predicate` takes these fields by keyword."""

    result_doc: Mapping[str, Any]
    attempt: Mapping[str, Any]
    inputs: Mapping[str, Any]
    model: Mapping[str, Any]
    outcome: Mapping[str, Any]
    sandbox: Mapping[str, Any]
    started: Any
    finished: Any
    tool_version: str | None = None


def make_predicate(**facts: Any) -> dict[str, Any]:
    """The eval-attempt predicate; BadInput naming the first problem, so a bad record is never
    signed. `started` / `finished` are aware datetimes or `...Z` strings; the keywords are
    `AttemptFacts`' fields (a missing or unknown one is a TypeError)."""
    (result_doc, attempt, inputs, model, outcome, sandbox, started, finished,
     tool_version) = AttemptFacts(**facts)
    if tool_version is None:
        from plimsoll_ci import __version__ as tool_version
    start = utc_text(started, "start time")
    end = utc_text(finished, "end time")
    predicate = {
        "attempt": dict(attempt),
        "inputs": dict(inputs),
        "model": dict(model),
        "outcome": dict(outcome),
        "result": {"sha256": record.result_digest(result_doc)},
        "run": {"finishedOn": end, "startedOn": start},
        "sandbox": dict(sandbox),
        "tool": {"name": "plimsoll-ci", "version": tool_version},
    }
    problems = check_predicate(predicate)
    if problems:
        raise BadInput(f"eval attempt record: {problems[0]}")
    return predicate


def make_statement(result_doc: Any, predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 for one attempt; the predicate's result digest must match."""
    digest = record.result_digest(result_doc)
    if predicate.get("result", {}).get("sha256") != digest:
        raise BadInput("eval attempt record: the predicate's result digest is not this "
                       "result's digest")
    return {
        "_type": record.STATEMENT_TYPE,
        "predicate": dict(predicate),
        "predicateType": PREDICATE_TYPE,
        "subject": [{"digest": {"sha256": digest}, "name": RESULT_NAME}],
    }


def _digest(obj: Any, where: str, p: list[str]) -> None:
    if record._keys(obj, {"sha256"}, where, p) and not is_sha256_hex(obj["sha256"]):
        p.append(f"{where} is not a SHA-256 in lowercase hex")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def check_predicate(pred: Any) -> list[str]:
    """Every way `pred` departs from the eval-attempt predicate's shape (empty when it fits)."""
    p: list[str] = []
    top = {"attempt", "inputs", "model", "outcome", "result", "run", "sandbox", "tool"}
    if not record._keys(pred, top, "predicate", p):
        return p
    a = pred["attempt"]
    if record._keys(a, {"model", "run", "task"}, "attempt", p):
        if not (isinstance(a["model"], str) and a["model"] and isinstance(a["task"], str)
                and a["task"] and type(a["run"]) is int and a["run"] >= 1):
            p.append("attempt needs a model, a task and a run number from 1")
    i = pred["inputs"]
    if record._keys(i, {"allowlist", "repository", "task", "turns"}, "inputs", p):
        if not _strings(i["allowlist"]):
            p.append("inputs.allowlist must list program names")
        if type(i["turns"]) is not int or i["turns"] < 1:
            p.append("inputs.turns must be a whole number from 1")
        repo = i["repository"]
        if record._keys(repo, {"files", "sha256"}, "inputs.repository", p):
            if not _count(repo["files"]) or not is_sha256_hex(repo["sha256"]):
                p.append("inputs.repository needs a file count and a SHA-256 in lowercase hex")
        task = i["task"]
        if record._keys(task, {"probe", "sha256", "test", "touch"}, "inputs.task", p):
            if not (isinstance(task["probe"], bool) and is_sha256_hex(task["sha256"])
                    and _strings(task["test"]) and task["test"] and _strings(task["touch"])):
                p.append("inputs.task needs probe, a SHA-256, the test command and touch paths")
    m = pred["model"]
    if record._keys(m, {"baseUrl", "stopped", "tokens", "transcript"}, "model", p):
        if not isinstance(m["baseUrl"], str) or m["stopped"] not in STOPS or \
                not _count(m["tokens"]):
            p.append("model needs a base URL, a token count and stopped (null, budget, "
                     "rate_limit, error, time_limit or tool_calls)")
        _digest(m["transcript"], "model.transcript", p)
    o = pred["outcome"]
    if record._keys(o, {"diff", "finalTree", "guardedTest"}, "outcome", p):
        _digest(o["diff"], "outcome.diff", p)
        _digest(o["finalTree"], "outcome.finalTree", p)
        test = o["guardedTest"]
        if record._keys(test, {"exitCode", "output"}, "outcome.guardedTest", p):
            if type(test["exitCode"]) is not int:
                p.append("outcome.guardedTest.exitCode is not an integer")
            _digest(test["output"], "outcome.guardedTest.output", p)
    _digest(pred["result"], "result", p)
    run = pred["run"]
    if record._keys(run, {"finishedOn", "startedOn"}, "run", p):
        if not (is_utc_time(run["startedOn"]) and is_utc_time(run["finishedOn"])):
            p.append("run times must be UTC times like 2026-01-31T12:00:00Z")
        elif run["finishedOn"] < run["startedOn"]:
            p.append("run finished before it started")
    s = pred["sandbox"]
    if record._keys(s, {"evidence", "provider", "tier"}, "sandbox", p):
        if s["tier"] not in TIERS or not isinstance(s["provider"], str) or not s["provider"] \
                or not isinstance(s["evidence"], dict):
            p.append(f"sandbox needs a provider, evidence and a tier ({', '.join(TIERS)})")
    tool = pred["tool"]
    if record._keys(tool, {"name", "version"}, "tool", p):
        if tool["name"] != "plimsoll-ci" or not isinstance(tool["version"], str):
            p.append("tool must be plimsoll-ci with a version string")
    return p

