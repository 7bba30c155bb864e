"""A loop whose own controller carries the practice seeds (in decimal, hex, base64, or base64
wrapped over lines) is never shown as a plain pass: not in the terminal, report.md or report.html
(read in chromium, under every line the slider can set), whatever its gap; result.json keeps the
arithmetic verdict and adds the combined one."""

from __future__ import annotations

import base64
import os
import shutil
import textwrap

import pytest
from kit.squeeze import chromium, synthetic_read

import plimsoll_sim as sim
from plimsoll_ci.squeeze import checks, report_html, report_md
from plimsoll_ci.squeeze.result import compute

SEEDS = sim.PRACTICE_SEEDS
_BLOB = base64.b64encode(",".join(str(s) for s in SEEDS).encode()).decode()
FORMS = {
    "decimal": "SEEDS = [" + ", ".join(str(s) for s in SEEDS) + "]\n",
    "hex": "SEEDS = [" + ", ".join(hex(s) for s in SEEDS) + "]\n",
    "base64": f"BLOB = {_BLOB!r}\n",
    "base64 over lines": "BLOB = (\n" + "".join(f"    {p!r}\n" for p in textwrap.wrap(_BLOB, 40))
                         + ")\n",
}
# encoded flies honestly: its gap (+0.5) passes both lines on the arithmetic alone
LOOPS = {
    "honest": (15, 56, [(14, 55), (13, 57), (14, 54)]),  # gap +1: the slider flips it
    "encoded": (14, 57, [(13, 56), (14, 58), (13, 55), (14, 57)]),
}
_SCAN = []


def carrying(form: str) -> dict[str, dict]:
    if not _SCAN:
        _SCAN.append(checks.scanner(SEEDS))
    source = "def step(obs):\n    return [0.0, 0.0]\n" + FORMS[form]
    return {"loops/encoded.py": checks.check({"controller.py": source.encode()}, _SCAN[0])}


def derived(form: str):
    return compute(synthetic_read(LOOPS, control=[(3, 10)], carrying=carrying(form)))


@pytest.mark.parametrize("form", list(FORMS))
def test_result_keeps_the_arithmetic_and_adds_a_flag_for_a_seed_carrying_loop(form):
    result, evidence = derived(form)
    loops = {lp["name"]: lp for lp in result["loops"]}
    enc = loops["encoded"]
    assert enc["verdict"] == {"flights": "pass", "percent": "pass"}  # the arithmetic, as it was
    assert enc["carries"] == ["practice seeds"]
    assert enc["combined_verdict"] == {"flights": "flag: carries practice seeds",
                                       "percent": "flag: carries practice seeds"}
    assert loops["honest"]["combined_verdict"] == loops["honest"]["verdict"]
    assert loops["honest"]["carries"] == []
    figures = {f["figure"] for f in evidence["figures"]}
    assert {"loops.encoded.carries", "loops.encoded.combined_verdict"} <= figures


@pytest.mark.parametrize("form", list(FORMS))
def test_the_terminal_line_of_a_seed_carrying_loop_says_flag_before_any_pass(form):
    result, _ = derived(form)
    line = next(x for x in report_md.verdict_lines(result) if x.startswith("encoded:"))
    gap = line.index("gap +0.5: ")
    assert line[gap:].startswith("gap +0.5: flag: carries practice seeds under every line")
    assert "pass" not in line[:line.index("(the gap alone")]
    assert "code checks: loop carries practice seeds; rebuilds carry nothing" in line
    honest = next(x for x in report_md.verdict_lines(result) if x.startswith("honest:"))
    assert "loop carries nothing" in honest


@pytest.mark.parametrize("form", list(FORMS))
def test_report_md_never_shows_a_seed_carrying_loop_as_a_bold_pass(form):
    result, evidence = derived(form)
    text = report_md.render(result, evidence)
    row = next(x for x in text.splitlines() if x.startswith("| encoded |"))
    assert "**pass**" not in row and row.count("**flag: carries practice seeds**") == 2
    assert row.endswith("| loop carries practice seeds; rebuilds carry nothing |")
    section = text[text.index("## encoded"):text.index("## Control group")]
    assert "**pass**" not in section
    assert "**flag: carries practice seeds** under the 2-flight line" in section
    assert "the gap alone would say pass and pass" in section
    for seed in SEEDS:
        assert str(seed) not in text


@pytest.fixture
def browser(tmp_path):
    from kit.cdp import Browser

    b = Browser(chromium(), str(tmp_path / "profile"))
    try:
        yield b
    finally:
        b.close()


def open_report(browser, tmp_path, result, evidence):
    path = tmp_path / "report.html"
    path.write_text(report_html.render(result, evidence), encoding="utf-8")
    browser.open(path.as_uri())
    return path


def verdicts(browser) -> dict[str, str]:
    return browser.js("Object.fromEntries([...document.querySelectorAll('#verdicts tbody tr')]"
                      ".map((r, i) => [r.dataset.loop, document.getElementById('verdict-' + i)"
                      ".textContent]))")


@pytest.mark.parametrize("form", list(FORMS))
def test_report_html_flags_a_seed_carrying_loop_under_every_slider_position(form, browser,
                                                                            tmp_path):
    result, evidence = derived(form)
    open_report(browser, tmp_path, result, evidence)
    seen = set()
    for unit, top in (("flights", 16), ("percent", 100)):
        browser.js(f"document.getElementById('unit-{unit}').click()")
        for k in range(0, 2 * top + 1):
            browser.js(f"(s => {{ s.value = '{k / 2}'; s.dispatchEvent(new Event('input')); }})"
                       "(document.getElementById('line'))")
            got = verdicts(browser)
            assert got["encoded"] == "flag: carries practice seeds", (unit, k / 2)
            seen.add(got["honest"])
    assert seen == {"flag", "pass"}  # the slider still moves the honest loop's verdict
    assert browser.js("document.getElementById('checks-1').textContent") == \
        "loop carries practice seeds; rebuilds carry nothing"
    assert browser.js("document.getElementById('own-p-1').getAttribute('class')") == "own flag"


def test_report_html_shows_the_noise_of_every_loop(browser, tmp_path):
    result, evidence = derived("hex")
    open_report(browser, tmp_path, result, evidence)
    rows = browser.js("[...document.querySelectorAll('#noise tbody tr')].map(r => "
                      "[...r.cells].map(c => c.textContent))")
    want = {lp["name"]: f"{lp['noise']['sd_flights']:.2f}" for lp in result["loops"]}
    assert {r[0]: r[2] for r in rows} == want


def test_no_rebuild_dot_is_hidden_by_the_diamond_or_another_dot(browser, tmp_path):
    # every rebuild lands where its loop's own controller does, three of them on one score
    loops = {"same": (12, 40, [(12, 40), (12, 40), (12, 40), (11, 41)]),
             "far": (16, 64, [(9, 30)] * 6)}
    result, evidence = compute(synthetic_read(loops, control=[(12, 40), (12, 40)]))
    path = open_report(browser, tmp_path, result, evidence)
    hidden = browser.js("""[...document.querySelectorAll('circle')].filter(c => {
        c.scrollIntoView({block: 'center'});
        const b = c.getBoundingClientRect();
        return document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2) !== c;
    }).map(c => c.textContent)""")
    assert browser.js("document.querySelectorAll('circle').length") == 2 * (4 + 6 + 2)
    assert hidden == []
    shot = tmp_path / "report.png"
    browser.screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("PLIMSOLL_SCREENSHOTS")  # CI keeps one screenshot per run
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(shot, os.path.join(keep, "squeeze-report.png"))
        shutil.copy(path, os.path.join(keep, "squeeze-report.html"))
