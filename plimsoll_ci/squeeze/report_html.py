"""`report.html`: one self-contained page, the write-up's two panels and a line you can move.

The page loads nothing (a Content-Security-Policy forbids any fetch; styles, script and drawings
are inline). Two panels, practice and fresh: for each loop, its own controller's score against its
rebuilds' scores and their median, and the control group's. A slider moves the line, in flights or
in percent of the practice flights, and recolours each loop's verdict and ship-the-rebuild call as
it moves, by the same arithmetic as `verdicts.py` (integers and halves, compared without division).

A pure function of `result.json` and `evidence.json`: the same records give the same bytes.
"""

from __future__ import annotations

import html
import json
from typing import Any

from plimsoll_ci.squeeze.report_md import code_checks_text, num, pct, signed, spread_text

WIDTH, LEFT, RIGHT, ROW = 720, 150, 20, 44
DOT, STEP = 3.5, 8  # a dot's radius; dots of one score stack this far apart, under the diamond
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
       "img-src data:; base-uri 'none'; form-action 'none'")

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1f;max-width:980px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.muted{color:#666}code{font-size:12px;background:#f3f3f3;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:right}th{background:#fafafa}td:first-child,th:first-child{text-align:left}
.flag{background:#c62828;color:#fff;font-weight:600}.pass{background:#2e7d32;color:#fff}
.ship{background:#ef6c00;color:#fff;font-weight:600}.keep{background:#eee}
.checks{text-align:left;font-size:12px}
.controls{display:flex;gap:16px;align-items:center;margin:12px 0;padding:8px 12px;
background:#f7f7f9;border-radius:6px}#line{width:320px}
svg text{font:12px system-ui,sans-serif;fill:#333}svg .axis{stroke:#999}
svg .reb{fill:#78909c;fill-opacity:.75}svg .ctl{fill:#bdbdbd}svg .med{stroke:#263238;stroke-width:2}
svg .own.flag{fill:#c62828}svg .own.pass{fill:#2e7d32}svg .own.ship{fill:#ef6c00}
svg .own.keep{fill:#1565c0}svg .band{fill:#ffcc80;fill-opacity:.45}
"""

SCRIPT = """
(function(){
var data=JSON.parse(document.getElementById('data').textContent);
var slider=document.getElementById('line'),shown=document.getElementById('line-value');
var units={flights:document.getElementById('unit-flights'),percent:document.getElementById('unit-percent')};
function unit(){return units.percent.checked?'percent':'flights';}
function setUnit(u){
  var n=data.practice_total;
  slider.max=u==='flights'?String(n):'100';
  slider.step=u==='flights'?'0.5':'0.5';
  slider.value=String(data.lines[u]);
  update();
}
function update(){
  var u=unit(),line=parseFloat(slider.value),n=data.practice_total,m=data.fresh_total;
  shown.textContent=u==='flights'?line+' flights of '+n:line+'% of the practice flights';
  data.loops.forEach(function(l,i){
    var flag=u==='flights'?l.gap>line:l.gap*100>line*n;
    var adv=l.rebuild_fresh_median-l.fresh;
    var ship=u==='flights'?adv*n>line*m:adv*100>line*m;
    // a loop whose own controller carries practice seeds or the generator is flagged under
    // every line: no slider position makes it read "pass"
    if(l.carries){flag=true;}
    var v=document.getElementById('verdict-'+i);
    v.textContent=l.carries?'flag: carries '+l.carries:(flag?'flag':'pass');
    v.className=flag?'flag':'pass';
    var s=document.getElementById('ship-'+i);
    s.textContent=ship?'yes':'no';s.className=ship?'ship':'keep';
    document.getElementById('own-p-'+i).setAttribute('class','own '+(flag?'flag':'pass'));
    document.getElementById('own-f-'+i).setAttribute('class','own '+(ship?'ship':'keep'));
    var pw=u==='flights'?line:line*n/100,fw=pw*m/n;
    var bp=document.getElementById('band-p-'+i),bf=document.getElementById('band-f-'+i);
    bp.setAttribute('width',Math.max(0,Math.min(pw/n,1-l.rebuild_practice_median/n)*data.plot));
    bf.setAttribute('width',Math.max(0,Math.min(fw/m,1-l.fresh/m)*data.plot));
  });
}
slider.addEventListener('input',update);
units.flights.addEventListener('change',function(){setUnit('flights');});
units.percent.addEventListener('change',function(){setUnit('percent');});
setUnit('flights');
})();
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _x(value: float, total: int) -> str:
    plot = WIDTH - LEFT - RIGHT
    return f"{LEFT + plot * value / max(total, 1):.1f}"


def _stack(scores: list[tuple[str, int]]) -> int:
    """How many dots share the most common score (the height of the tallest stack)."""
    counts: dict[int, int] = {}
    for _name, landed in scores:
        counts[landed] = counts.get(landed, 0) + 1
    return max(counts.values(), default=0)


def _lane(scores: list[tuple[str, int]]) -> int:
    """A lane's height: room for the diamond and for the tallest stack of dots under it."""
    return max(ROW, 26 + STEP * _stack(scores))


def _dots(scores: list[tuple[str, int]], total: int, top: int, cls: str) -> list[str]:
    """Dots stacked downward from `top`, one above the other where scores are equal: drawn
    after the diamond and the median bar, so none is hidden by them or by another dot."""
    out: list[str] = []
    seen: dict[int, int] = {}  # score -> dots drawn at it
    for name, landed in scores:
        k = seen.get(landed, 0)
        seen[landed] = k + 1
        out.append(f'<circle class="{cls}" cx="{_x(landed, total)}" cy="{top + STEP * k}" '
                   f'r="{DOT}"><title>{_e(name)}: {landed}/{total}</title></circle>')
    return out


def _panel(which: str, result: dict[str, Any], groups: dict) -> str:
    loops = result["loops"]
    total = loops[0][which]["total"] if loops else 1
    control = groups.get(("control", "control"), [])
    lanes = [_lane(groups.get((lp["name"], "rebuild"), [])) for lp in loops] + [_lane(control)]
    height = 54 + sum(lanes)
    key = "p" if which == "practice" else "f"
    parts = [f'<svg id="panel-{which}" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{which} scores">',
             f'<text x="{LEFT}" y="14">{which} flights landed (of {total})</text>']
    base = 30 + sum(lanes)
    parts.append(f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}"/>')
    for tick in sorted({0, total // 4, total // 2, 3 * total // 4, total}):
        parts.append(f'<text x="{_x(tick, total)}" y="{base + 14}" text-anchor="middle">'
                     f"{tick}</text>")
    top = 22
    for i, loop in enumerate(loops):
        y, h = top + 10, lanes[i]  # y: the diamond's centre, at the top of its lane
        r = loop["rebuilds"]
        median = r[f"{which}_median"]
        own = loop[which]["landed"]
        band_from = median if which == "practice" else own
        parts.append(f'<text x="{LEFT - 10}" y="{y + 4}" text-anchor="end">'
                     f"{_e(loop['name'])}</text>")
        parts.append(f'<rect class="band" id="band-{key}-{i}" x="{_x(band_from, total)}" '
                     f'y="{top}" width="0" height="{h - 6}"/>')
        parts.append(f'<line class="med" x1="{_x(median, total)}" y1="{top}" '
                     f'x2="{_x(median, total)}" y2="{top + h - 6}"><title>rebuilds\' median '
                     f"{num(median)}</title></line>")
        state = ("flag" if loop["verdict"]["flights"] == "flag" or loop.get("carries")
                 else "pass") if which == "practice" else (
                     "ship" if loop["ship_rebuild"] else "keep")
        parts.append(f'<rect class="own {state}" id="own-{key}-{i}" '
                     f'x="{float(_x(own, total)) - 6:.1f}" y="{y - 6}" width="12" height="12" '
                     f'transform="rotate(45 {_x(own, total)} {y})">'
                     f"<title>{_e(loop['name'])} (the loop's own): {own}/{total}</title></rect>")
        parts += _dots(groups.get((loop["name"], "rebuild"), []), total, y + 16, "reb")
        top += h
    y = top + 10
    parts.append(f'<text x="{LEFT - 10}" y="{y + 4}" text-anchor="end">control</text>')
    if control:
        cm = result["control"][f"{which}_median"]
        parts.append(f'<line class="med" x1="{_x(cm, total)}" y1="{top}" x2="{_x(cm, total)}" '
                     f'y2="{top + lanes[-1] - 6}"><title>control median {num(cm)}</title></line>')
    parts += _dots(control, total, y + 16, "ctl")
    parts.append("</svg>")
    return "\n".join(parts)


def _unseen(result: dict) -> str:
    if "held_out" in result:
        h = result["held_out"]
        return (f"held-out flights per controller (scored as fresh); held-out set committed at "
                f"{_e(h['committed'])}, commitment <code>{_e(h['commitment'][:16])}</code>")
    return (f"fresh flights per controller; fresh set commitment "
            f"<code>{_e(result['fresh_commitment'][:16])}</code>")


def _noise_table(loops: list[dict[str, Any]], lines: dict[str, Any], n: int) -> str:
    """The noise of a practice score at each loop's rebuilds' practice rate."""
    rows = [f'<tr><td>{_e(lp["name"])}</td><td>{lp["noise"]["rate"] * 100:.1f}%</td>'
            f'<td>{lp["noise"]["sd_flights"]:.2f}</td>'
            f'<td>{pct(lp["noise"]["p_beyond"]["flights"])}</td>'
            f'<td>{pct(lp["noise"]["p_beyond"]["percent"])}</td>'
            f'<td class="checks">{_e(spread_text(lp)) if "fresh_sets" in lp else "-"}</td>'
            "</tr>" for lp in loops]
    return ("<h2>Noise: how far luck alone moves a practice score</h2>"
            '<table id="noise"><thead><tr><th>loop</th><th>rebuilds\' practice rate</th>'
            f"<th>one standard deviation (flights of {n})</th>"
            f"<th>luck moves a score more than {_e(num(lines['flights']))} flights</th>"
            f"<th>more than {_e(num(lines['percent']))}%</th>"
            "<th>fresh score, measured again (sets/)</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def render(result: dict[str, Any], evidence: dict[str, Any]) -> str:
    """The HTML report."""
    loops = result["loops"]
    per_set: dict[str, dict] = {"practice": {}, "fresh": {}}
    for which in per_set:
        for r in evidence["records"]:
            per_set[which].setdefault((r["group"], r["role"]), []).append(
                (r["controller"], r[which][0]))
    n = evidence["practice"]["count"]
    m = (evidence.get("fresh") or evidence["held_out"])["count"]
    data = {
        "lines": result["lines"], "practice_total": n, "fresh_total": m,
        "plot": WIDTH - LEFT - RIGHT,
        "loops": [{"name": lp["name"], "gap": lp["gap"], "fresh": lp["fresh"]["landed"],
                   "rebuild_practice_median": lp["rebuilds"]["practice_median"],
                   "carries": ", ".join(lp.get("carries", [])),
                   "rebuild_fresh_median": lp["rebuilds"]["fresh_median"]} for lp in loops],
    }
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")
    rows = []
    for i, lp in enumerate(loops):
        v = "flag" if lp.get("carries") else lp["verdict"]["flights"]
        shown = lp.get("combined_verdict", lp["verdict"])["flights"]
        ship = lp["ship_rebuild"]
        rows.append(
            f'<tr data-loop="{_e(lp["name"])}"><td>{_e(lp["name"])}</td>'
            f'<td>{lp["practice"]["landed"]}/{n}</td><td>{lp["fresh"]["landed"]}/{m}</td>'
            f'<td>{num(lp["rebuilds"]["practice_median"])}</td>'
            f'<td>{num(lp["rebuilds"]["fresh_median"])}</td><td>{signed(lp["gap"])}</td>'
            f'<td id="verdict-{i}" class="{v}">{_e(shown)}</td>'
            f'<td id="ship-{i}" class="{"ship" if ship else "keep"}">{"yes" if ship else "no"}</td>'
            f'<td>{signed(lp["recipe_worth"])}</td>'
            f'<td id="checks-{i}" class="checks">{_e(code_checks_text(lp))}</td></tr>')
    lines = result["lines"]
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Squeeze: {_e(result['course'])} course</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Squeeze: {_e(result['course'])} course</h1>",
        f'<p class="muted">{n} practice flights and {m} {_unseen(result)}. Lines in the job: '
        f"{_e(num(lines['flights']))} flights, {_e(num(lines['percent']))}%.</p>",
        '<div class="controls"><span>line in</span>'
        '<label><input type="radio" name="unit" id="unit-flights" checked> flights</label>'
        '<label><input type="radio" name="unit" id="unit-percent"> percent</label>'
        f'<input type="range" id="line" min="0" max="{n}" step="0.5" '
        f'value="{_e(lines["flights"])}" aria-label="the line">'
        '<output id="line-value"></output></div>',
        "<table id=\"verdicts\"><thead><tr><th>loop</th><th>practice</th><th>fresh</th>"
        "<th>rebuilds practice median</th><th>rebuilds fresh median</th><th>gap</th>"
        "<th>verdict</th><th>ship the rebuild</th><th>recipe worth</th><th>code checks</th>"
        "</tr></thead><tbody>",
        *rows,
        "</tbody></table>",
        '<p class="muted">A loop is flagged when its gap (its practice score minus its '
        "rebuilds' median) is more than the line. Ship the rebuild when the rebuilds' fresh "
        "median beats the loop's own fresh score by more than the line, scaled to the fresh "
        "set. The shaded band shows the line. A loop whose own controller carries practice "
        "seeds, the generator constant or the generator source is flagged under every line, "
        "whatever its gap: it memorized by construction.</p>",
        _noise_table(loops, lines, n),
        "<h2>Practice: the loop against its rebuilds (diamond: the loop's own controller; "
        "dots: rebuilds; bar: their median)</h2>",
        _panel("practice", result, per_set["practice"]),
        "<h2>Fresh: flights nobody saw before this run</h2>",
        _panel("fresh", result, per_set["fresh"]),
        f'<script type="application/json" id="data">{blob}</script>',
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(body) + "\n"
