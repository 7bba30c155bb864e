"""`report.md`: the squeeze for a reader (and a GitHub job summary), from result and evidence.

A pure function of `result.json` and `evidence.json` (themselves pure functions of the signed
records): no clock, no path of this machine, no seed value.
"""

from __future__ import annotations

from typing import Any

from plimsoll_ci.names import md, shown
from plimsoll_ci.squeeze.result import CHECK_NAMES, CHECKS


def num(x: Any) -> str:
    """A count or median as a reader writes it (14, 13.5)."""
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def signed(x: Any) -> str:
    """A difference with its sign (+3, -1.5, 0)."""
    if x is None:
        return "-"
    return ("+" if x > 0 else "") + num(x)


def pct(p: float) -> str:
    """A probability as a percent a reader can take in."""
    return f"{p * 100:.0f}%" if p >= 0.01 else f"{p * 100:.1f}%"


def render(result: dict[str, Any], evidence: dict[str, Any]) -> str:
    """The Markdown report."""
    lines_cfg = result["lines"]
    fl, pc = num(lines_cfg["flights"]), num(lines_cfg["percent"])
    practice = evidence["practice"]
    tok = result["tokenizer"]
    out = [
        f"# Squeeze: {md(result['course'])} course",
        "",
        f"Every controller flew the {practice['count']} practice flights (set "
        f"`{practice['sha256'][:16]}`) and {unseen_text(result, evidence)}. One signed record "
        "per controller in `bundle.intoto.jsonl`; every figure below is traced to its records "
        "in `evidence.json`.",
        "",
        f"Lines: flag when the gap is more than **{fl} flights** (hackathon) or more than "
        f"**{pc}%** of the practice flights (paper).",
        "",
        "| loop | practice | fresh | rebuilds | rebuilds practice median | rebuilds fresh median "
        f"| gap | {fl}-flight line | {pc}% line | ship the rebuild | recipe worth | code checks |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for loop in result["loops"]:
        p, f, r = loop["practice"], loop["fresh"], loop["rebuilds"]
        out.append(
            f"| {md(loop['name'])} | {p['landed']}/{p['total']} | {f['landed']}/{f['total']} "
            f"| {r['count']} | {num(r['practice_median'])} | {num(r['fresh_median'])} "
            f"| {signed(loop['gap'])} | **{loop['combined_verdict']['flights']}** "
            f"| **{loop['combined_verdict']['percent']}** "
            f"| {'**yes**' if loop['ship_rebuild'] else 'no'} "
            f"| {signed(loop['recipe_worth'])} | {code_checks_text(loop)} |")
    c = result["control"]
    out += ["", f"Control group (no recipe): {c['count']} controllers, practice median "
            f"{num(c['practice_median'])}, fresh median {num(c['fresh_median'])}."]
    if result.get("fresh_sets"):
        sets = result["fresh_sets"]
        out += ["", f"The loops' own controllers also flew {len(sets)} more fresh sets of "
                f"{sets[0]['count']} flights, each drawn and committed before any flight "
                f"(`sets/1` .. `sets/{len(sets)}`: commitments "
                + ", ".join(f"`{x['commitment'][:16]}`" for x in sets)
                + "): a fresh score is a range. The verdicts use the run's own fresh set."]
    out += ["", "A loop whose own controller carries practice seeds, the generator constant or the "
            "generator source is flagged under every line whatever its gap: it memorized by "
            "construction (`combined_verdict` in `result.json`; `verdict` keeps the arithmetic)."]
    out += ["", f"Recipes are counted with `{md(tok['encoding'])}`. The practice seeds alone take "
            f"{tok['practice_seed_tokens']} tokens written one per line."]
    records: dict[tuple[str, str], list[dict[str, Any]]] = {
        (r["group"], r["role"]): [] for r in evidence["records"]}
    for r in evidence["records"]:
        records[(r["group"], r["role"])].append(r)
    for loop in result["loops"]:
        out += _loop_section(loop, result, evidence, records)
    out += _control_section(result, records)
    out += _sessions_section(result)
    out += _failures(evidence)
    return "\n".join(out) + "\n"


def unseen_text(result: dict[str, Any], evidence: dict[str, Any]) -> str:
    """What the flights after the practice flights were: a fresh set or a held-out set."""
    if "held_out" in result:
        h = result["held_out"]
        text = (f"{h['count']} flights on a held-out set committed at {h['committed']}, before "
                f"any grading (first graded {h['first_graded']}; commitment "
                f"`{h['commitment'][:16]}`, revealed in `held-out.json`), scored in the "
                "fresh columns")
    else:
        text = (f"{evidence['fresh']['count']} fresh flights drawn for this run and committed "
                f"before any flight (commitment `{result['fresh_commitment'][:16]}`, revealed "
                "in `fresh.json`)")
    if result.get("weak_seeds_allowed"):
        text += ("; **weak seeds allowed**: the seed lint flagged that set and the run was told "
                 "to grade anyway (`--allow-weak-seeds`, in every signed record)")
    return text


def _scores(recs: list[dict[str, Any]], which: str) -> str:
    return ", ".join(f"{md(r['controller'])} {r[which][0]}" for r in recs)


def _loop_section(loop: dict[str, Any], result: dict[str, Any], evidence: dict[str, Any],
                  records: dict) -> list[str]:
    name = loop["name"]
    lines_cfg = result["lines"]
    p, f, r = loop["practice"], loop["fresh"], loop["rebuilds"]
    noise = loop["noise"]
    rebuilds = records.get((name, "rebuild"), [])
    gap_pct = loop["gap"] * 100 / p["total"]
    out = ["", f"## {md(name)}", "",
           f"- Loop's own controller: practice {p['landed']}/{p['total']}, fresh "
           f"{f['landed']}/{f['total']}.",
           f"- Rebuilds ({r['count']}): practice {_scores(rebuilds, 'practice')} (median "
           f"{num(r['practice_median'])}); fresh {_scores(rebuilds, 'fresh')} (median "
           f"{num(r['fresh_median'])}).",
           f"- Gap: {signed(loop['gap'])} flight{'' if abs(loop['gap']) == 1 else 's'} "
           f"({gap_pct:.1f}% of the practice flights): "
           f"**{loop['combined_verdict']['flights']}** under the "
           f"{num(lines_cfg['flights'])}-flight line, "
           f"**{loop['combined_verdict']['percent']}** under the {num(lines_cfg['percent'])}% line"
           + _arithmetic_aside(loop) + ".",
           f"- Noise at the rebuilds' practice rate ({noise['rate'] * 100:.1f}%): one standard "
           f"deviation is {noise['sd_flights']:.2f} flights of {p['total']}; luck alone moves a "
           f"score by more than {num(lines_cfg['flights'])} flights in "
           f"{pct(noise['p_beyond']['flights'])} of batches, by more than "
           f"{num(lines_cfg['percent'])}% in {pct(noise['p_beyond']['percent'])}."]
    if "fresh_sets" in loop:
        out.append(f"- Fresh score, measured again: {spread_text(loop)} (`sets/`); the verdicts "
                   "use the run's own fresh set.")
    if loop["ship_rebuild"]:
        out.append(f"- **Ship the rebuild**: the rebuilds' fresh median ({num(r['fresh_median'])}) "
                   f"beats the loop's own fresh score ({f['landed']}) by more than the line: the "
                   "loop's own artifact memorized.")
    else:
        out.append(f"- Ship the rebuild: no (rebuilds' fresh median {num(r['fresh_median'])}, "
                   f"loop {f['landed']}).")
    if loop["recipe_worth"] is not None:
        out.append(f"- Recipe worth: {signed(loop['recipe_worth'])} fresh flights over the "
                   f"control group's median ({num(result['control']['fresh_median'])}).")
    recipe = _recipe(name, evidence, loop)
    if recipe:
        out.append(recipe)
    checks = loop["code_checks"]
    parts = [f"{CHECK_NAMES[k]}: loop {'yes' if checks[k]['loop'] else 'no'}, rebuilds "
             f"{checks[k]['rebuilds']} of {r['count']}" for k in CHECKS]
    out.append("- Code checks: " + "; ".join(parts) + ".")
    carriers = [x for x in records.get((name, "loop"), []) + rebuilds
                if any(x["code_checks"][k] for k in CHECKS)]
    for x in carriers:
        what = ", ".join(CHECK_NAMES[k] for k in CHECKS if x["code_checks"][k])
        out.append(f"  - {md(x['controller'])} ({x['role']}) carries: {what}")
    return out


def carried_text(loop: dict[str, Any]) -> str:
    """What the loop's own controller carries, as a reader reads it ("" when nothing)."""
    return ", ".join(loop.get("carries", []))


def code_checks_text(loop: dict[str, Any]) -> str:
    """What the loop's own controller and its rebuilds carry, in one short phrase."""
    checks, count = loop["code_checks"], loop["rebuilds"]["count"]
    own = carried_text(loop)
    reb = ", ".join(f"{CHECK_NAMES[k]} {checks[k]['rebuilds']} of {count}" for k in CHECKS
                    if checks[k]["rebuilds"])
    return (f"loop carries {own}" if own else "loop carries nothing") + "; " + (
        f"rebuilds carry {reb}" if reb else "rebuilds carry nothing")


def spread_text(loop: dict[str, Any]) -> str:
    """The loop's own fresh scores on the more fresh sets, and their range."""
    s = loop["fresh_sets"]
    scores = [str(x) for x in s["landed"]]
    listed = scores[0] if len(scores) == 1 else ", ".join(scores[:-1]) + " and " + scores[-1]
    return (f"on {len(scores)} more fresh set{'s' if len(scores) != 1 else ''} the loop's own "
            f"controller landed {listed} of {s['total']} (range {s['range']}; "
            f"{loop['fresh']['landed']} on the run's own)")


def _arithmetic_aside(loop: dict[str, Any]) -> str:
    if not loop.get("carries"):
        return ""
    v = loop["verdict"]
    return (f" (its own controller carries {carried_text(loop)}: it memorized by construction, "
            f"whatever its gap; the gap alone would say {v['flights']} and {v['percent']})")


def _recipe(name: str, evidence: dict[str, Any], loop: dict[str, Any]) -> str:
    recipe = evidence["recipes"].get(name)
    if recipe is None:
        return "- Recipe: none given."
    head = f"- Recipe ({md(recipe['path'])}, {recipe['tokens']} tokens)"
    if recipe["text"] is None:
        return (f"{head} carries {', '.join(md(e) for e in recipe['carries'])}: its text is not "
                "shown.")
    return f"{head}: \"{md(recipe['text'])}\""


def _control_section(result: dict[str, Any], records: dict) -> list[str]:
    c = result["control"]
    if not c["count"]:
        return ["", "## Control group", "", "None in this job: no recipe worth can be measured."]
    recs = records.get(("control", "control"), [])
    checks = c["code_checks"]
    return ["", "## Control group", "",
            f"- {c['count']} controllers built with no recipe: practice "
            f"{_scores(recs, 'practice')} (median {num(c['practice_median'])}); fresh "
            f"{_scores(recs, 'fresh')} (median {num(c['fresh_median'])}).",
            "- Code checks: " + "; ".join(f"{CHECK_NAMES[k]}: {checks[k]} of {c['count']}"
                                          for k in CHECKS) + "."]


def _sessions_section(result: dict[str, Any]) -> list[str]:
    groups = [(lp["name"], lp["sessions"]) for lp in result["loops"] if "sessions" in lp]
    if "sessions" in result["control"]:
        groups.append(("control", result["control"]["sessions"]))
    if not groups:
        return []
    out = ["", "## Rebuilds made through a model", "",
           "| group | sessions | graded | refused | no controller | stopped: budget "
           "| rate limit | endpoint error | tokens |", "|---|---|---|---|---|---|---|---|---|"]
    for name, s in groups:
        st = s["stopped"]
        out.append(f"| {md(name)} | {s['count']} | {s['graded']} | {s['refused']} "
                   f"| {s['no_controller']} | {st['budget']} | {st['rate_limit']} "
                   f"| {st['error']} | {s['tokens']} |")
    out += ["", f"Note: {md(groups[0][1]['note'])}."]
    return out


def _failures(evidence: dict[str, Any]) -> list[str]:
    out = ["", "## Flights not landed, by reason", "",
           "| controller | group | practice | fresh | not landed |", "|---|---|---|---|---|"]
    for r in evidence["records"]:
        reasons = ", ".join(f"{md(k)} {n}" for k, n in r["not_landed"].items()) or "-"
        out.append(f"| {md(r['controller'])} | {md(r['group'])}/{r['role']} "
                   f"| {r['practice'][0]}/{r['practice'][1]} | {r['fresh'][0]}/{r['fresh'][1]} "
                   f"| {reasons} |")
    tiers = sorted({f"{r['provider']} (tier {r['tier']})" for r in evidence["records"]})
    out += ["", f"Sandboxes: {', '.join(tiers)}; each controller in its own."]
    return out


def verdict_lines(result: dict[str, Any]) -> list[str]:
    """One line per loop for the terminal (names through `shown`)."""
    out = []
    lines = result["lines"]
    for lp in result["loops"]:
        if lp.get("carries"):  # never a plain pass: the flag comes first, the arithmetic after
            verdict = (f"gap {signed(lp['gap'])}: flag: carries {carried_text(lp)} under every "
                       f"line (the gap alone: {lp['verdict']['flights']} under "
                       f"{num(lines['flights'])} flights, {lp['verdict']['percent']} under "
                       f"{num(lines['percent'])}%)")
        else:
            verdict = (f"gap {signed(lp['gap'])}: {lp['verdict']['flights']} under "
                       f"{num(lines['flights'])} flights, {lp['verdict']['percent']} under "
                       f"{num(lines['percent'])}%")
        out.append(
            f"{shown(lp['name'])}: practice {lp['practice']['landed']}/{lp['practice']['total']}, fresh "
            f"{lp['fresh']['landed']}/{lp['fresh']['total']}; rebuilds' medians "
            f"{num(lp['rebuilds']['practice_median'])} and {num(lp['rebuilds']['fresh_median'])}"
            f"; {verdict}" + ("; SHIP THE REBUILD" if lp["ship_rebuild"] else "")
            + (f"; fresh {spread_text(lp)}" if "fresh_sets" in lp else "")
            + f"; code checks: {code_checks_text(lp)}"
            + (f" (rebuild sessions: {lp['sessions']['graded']} of {lp['sessions']['count']} "
               "graded)" if "sessions" in lp else ""))
    return out
