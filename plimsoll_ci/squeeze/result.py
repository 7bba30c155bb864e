"""`result.json` and `evidence.json`: pure functions of the signed records (`records.Read`).

`result.json` holds the verdicts; `evidence.json` holds every figure the reports state, each with
the rule that made it and the records (by their signed result digest, and bundle line) it comes
from. A verifier recomputes both from the bundle and compares bytes; shards merged into one bundle
give the same `result.json` as one runner would have.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from plimsoll_ci.squeeze import verdicts as v
from plimsoll_ci.squeeze.plan import unseen_section
from plimsoll_ci.squeeze.records import GradingRecord, Read, SessionRecord

EVIDENCE_FORMAT = "plimsoll-squeeze-evidence/1"
CHECKS = ("generator", "source", "practice_seeds")
CHECK_NAMES = {"generator": "generator constant", "source": "generator source",
               "practice_seeds": "practice seeds"}


def dumps(doc: Any) -> str:
    """The one JSON text of an artifact: sorted keys, two-space indent, a final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _carries(rec: GradingRecord) -> dict[str, bool]:
    return {k: bool(rec.code_checks.get(k)) for k in CHECKS}


def _count(recs: list[GradingRecord], check: str) -> int:
    return sum(_carries(r)[check] for r in recs)


def _median_or_none(values: list[int]) -> int | float | None:
    return v.json_number(v.median(values)) if values else None


STOPS = ("budget", "rate_limit", "error")
SESSIONS_NOTE = ("rebuild sessions stopped by the budget, a rate limit or an endpoint error, "
                 "refused (their workspace carried a sealed value) or that wrote no "
                 "controller are counted here and left out of the medians: not the recipe's "
                 "fault, and not evidence of what it teaches")


def _sessions(made: list[SessionRecord]) -> dict[str, Any]:
    """How a group's rebuild sessions ended."""
    def n(verdict: str) -> int:
        return sum(s.verdict == verdict for s in made)

    return {"count": len(made), "graded": n("graded"), "refused": n("refused"),
            "no_controller": n("no_controller"),
            "stopped": {k: sum(s.verdict == "stopped" and s.ended == k for s in made)
                        for k in STOPS},
            "tokens": sum(s.tokens for s in made), "note": SESSIONS_NOTE}


def compute(read: Read, sets: Sequence[Read] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """(result, evidence) from a complete, verified read of a squeeze bundle (and of its more
    fresh sets' bundles, checked against it: `fresh_sets.derive`)."""
    job = read.job
    assert job is not None and not read.problems
    lines = v.Lines(v.exact(job["lines"]["flights"]), v.exact(job["lines"]["percent"]))
    groups: dict[str, list[GradingRecord]] = {}
    for rec in read.records:
        groups.setdefault(rec.grading.group, []).append(rec)
    control = groups.pop("control", [])
    figures: list[dict[str, Any]] = []
    made: dict[str, list[SessionRecord]] = {}
    for one in read.sessions:
        made.setdefault(one.group, []).append(one)

    def figure(name: str, value: Any, rule: str, recs: list) -> Any:
        figures.append({"figure": name, "value": value, "rule": rule,
                        "records": [r.result_sha256 for r in recs]})
        return value

    def sessions_of(group: str, at: str, doc: dict[str, Any]) -> dict[str, Any]:
        if group in made:
            doc["sessions"] = figure(f"{at}.sessions", _sessions(made[group]),
                                     "how the group's rebuild sessions ended (session records)",
                                     made[group])
        return doc

    control_fresh = _median_or_none([r.fresh.landed for r in control])
    control_doc = {
        "count": len(control),
        "practice_median": figure("control.practice_median",
                                  _median_or_none([r.practice.landed for r in control]),
                                  "median practice landed of the control group", control),
        "fresh_median": figure("control.fresh_median", control_fresh,
                               "median fresh landed of the control group", control),
        "code_checks": {k: figure(f"control.code_checks.{k}", _count(control, k),
                                  f"control controllers whose code checks found {k}", control)
                        for k in CHECKS},
    }
    sessions_of("control", "control", control_doc)
    loops = [sessions_of(name, f"loops.{name}", _loop(name, recs, job, lines, control_fresh,
                                                      figure))
             for name, recs in groups.items()]
    for loop in loops if sets else []:  # the spread: each loop's own controller on each set
        mine = [next(r for r in s.records if r.grading.group == loop["name"]) for s in sets]
        loop["fresh_sets"] = figure(
            f"loops.{loop['name']}.fresh_sets",
            {"landed": [r.fresh.landed for r in mine], "total": mine[0].fresh.total,
             "min": min(r.fresh.landed for r in mine), "max": max(r.fresh.landed for r in mine),
             "range": max(r.fresh.landed for r in mine) - min(r.fresh.landed for r in mine)},
            "fresh landed of the loop's own controller on each more fresh set (sets/I/, by I; "
            "the records are those sets' records)", mine)
    all_recs = read.records
    tokenizer = {"encoding": job["tokenizer"]["encoding"],
                 "practice_seed_tokens": figure(
                     "tokenizer.practice_seed_tokens", job["tokenizer"]["practice_seed_tokens"],
                     "tokens of the practice seeds written one per line (job section)",
                     all_recs[:1])}
    kind, section = unseen_section(job)
    result = {
        "course": job["course"],
        "lines": dict(job["lines"]),
        "tokenizer": tokenizer,
        "loops": loops,
        "control": control_doc,
    }
    if kind == "fresh":
        result["fresh_commitment"] = section["commitment"]
        if sets:
            # (complete reads, each with its job: `fresh_sets.derive` checked them)
            fresh = [s.job["fresh"] for s in sets]  # type: ignore[index]
            result["fresh_sets"] = [{"set": n, "commitment": f["commitment"], "count": f["count"]}
                                    for n, f in enumerate(fresh, 1)]
    else:  # a held-out set committed earlier flew where a fresh set would have
        result["held_out"] = {"commitment": section["commitment"],
                              "committed": section["committedOn"], "count": section["count"],
                              "first_graded": min((r.started for r in all_recs), default="")}
    check = read.seed_check or {}
    if check.get("allowWeak"):
        result["weak_seeds_allowed"] = figure(
            "weak_seeds_allowed", True, "the seed lint flagged the unseen set and the run was "
            "told to grade anyway (--allow-weak-seeds; seedCheck of every record)", all_recs)
    evidence = {
        "format": EVIDENCE_FORMAT,
        "job_sha256": job["job_sha256"],
        "practice": dict(job["practice"]),
        kind: dict(section),
        "recipes": dict(job["recipes"]),
        "records": [_record(r) for r in all_recs],
        "figures": figures,
    }
    if read.seed_check is not None:
        evidence["seed_check"] = dict(read.seed_check)
    if read.sessions:
        evidence["sessions"] = [{"line": s.line, "result_sha256": s.result_sha256,
                                 "group": s.group, "index": s.index, "ended": s.ended,
                                 "verdict": s.verdict, "tokens": s.tokens,
                                 "carries": s.carries} for s in read.sessions]
    return result, evidence


def _record(r: GradingRecord) -> dict[str, Any]:
    return {"line": r.line, "result_sha256": r.result_sha256, "group": r.grading.group,
            "role": r.grading.role, "controller": r.grading.controller,
            "practice": list(r.practice), "fresh": list(r.fresh), "not_landed": r.not_landed,
            "provider": r.provider, "tier": r.tier,
            "code_checks": {k: r.code_checks.get(k, []) for k in CHECKS}}


def _loop(name: str, recs: list[GradingRecord], job: dict[str, Any], lines: v.Lines,
          control_fresh: int | float | None, figure: Any) -> dict[str, Any]:
    own = [r for r in recs if r.grading.role == "loop"]
    rebuilds = [r for r in recs if r.grading.role == "rebuild"]
    loop = own[0]
    at = f"loops.{name}"
    n, m = loop.practice.total, loop.fresh.total
    rp = [r.practice.landed for r in rebuilds]
    rf = [r.fresh.landed for r in rebuilds]
    pm, fm = v.median(rp), v.median(rf)
    gap = v.gap(loop.practice.landed, rp)
    noise = v.noise(pm, n, lines)
    recipe = job["recipes"].get(name)
    worth = v.recipe_worth(fm, control_fresh)
    both = own + rebuilds
    carried = [CHECK_NAMES[k] for k in CHECKS if _count(own, k)]
    arithmetic = v.verdict(gap, n, lines)
    return {
        "name": name,
        "practice": figure(f"{at}.practice", {"landed": loop.practice.landed, "total": n},
                           "practice flights the loop's own controller landed", own),
        "fresh": figure(f"{at}.fresh", {"landed": loop.fresh.landed, "total": m},
                        "fresh flights the loop's own controller landed", own),
        "rebuilds": {
            "count": len(rebuilds),
            "practice": figure(f"{at}.rebuilds.practice", rp,
                               "practice landed of each rebuild, in plan order", rebuilds),
            "fresh": figure(f"{at}.rebuilds.fresh", rf,
                            "fresh landed of each rebuild, in plan order", rebuilds),
            "practice_median": figure(f"{at}.rebuilds.practice_median", v.json_number(pm),
                                      "median of the rebuilds' practice landed", rebuilds),
            "fresh_median": figure(f"{at}.rebuilds.fresh_median", v.json_number(fm),
                                   "median of the rebuilds' fresh landed", rebuilds),
        },
        "gap": figure(f"{at}.gap", v.json_number(gap),
                      "loop practice landed minus the rebuilds' practice median", both),
        "verdict": figure(f"{at}.verdict", arithmetic,
                          "flag when the gap is more than the line (flights; percent of the "
                          "practice flights), else pass", both),
        "carries": figure(f"{at}.carries", carried,
                          "what the loop's own controller carries (its code checks)", own),
        "combined_verdict": figure(f"{at}.combined_verdict",
                                   v.with_code_checks(arithmetic, carried),
                                   "flag: carries ... under every line when the loop's own "
                                   "controller carries practice seeds, the generator constant "
                                   "or the generator source, else the verdict", both),
        "ship_rebuild": figure(f"{at}.ship_rebuild",
                               v.ship_rebuild(loop.fresh.landed, fm, m, n, lines),
                               "the rebuilds' fresh median beats the loop's fresh landed by more "
                               "than the flights line scaled to the fresh set", both),
        "recipe_tokens": figure(f"{at}.recipe_tokens", recipe["tokens"] if recipe else None,
                                "the recipe's tokens (job section)", own),
        "recipe_worth": figure(f"{at}.recipe_worth",
                               None if worth is None else v.json_number(worth),
                               "the rebuilds' fresh median minus the control group's", rebuilds),
        "noise": figure(f"{at}.noise", {
            "rate": float(noise.rate), "sd_flights": noise.sd_flights,
            "p_beyond": {"flights": noise.p_beyond_flights, "percent": noise.p_beyond_percent}},
            "binomial over the practice flights at the rebuilds' practice median rate", rebuilds),
        "code_checks": {k: figure(f"{at}.code_checks.{k}",
                                  {"loop": _count(own, k), "rebuilds": _count(rebuilds, k)},
                                  f"controllers whose code checks found {k}", both)
                        for k in CHECKS},
    }
