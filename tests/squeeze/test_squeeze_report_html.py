"""report.html in a real headless chromium: no network request, every loop shown, and the slider
moves a verdict exactly where the arithmetic of `verdicts.py` says."""

from __future__ import annotations

from fractions import Fraction

import pytest
from kit.squeeze import chromium, synthetic_read

from plimsoll_ci.squeeze import report_html, verdicts
from plimsoll_ci.squeeze.result import compute

LOOPS = {
    "wide": (16, 20, [(13, 50), (13, 52), (12, 51)]),  # gap 3; its rebuilds far better fresh
    "narrow": (15, 58, [(14, 57), (14, 60), (15, 55)]),  # gap 1 (6.25%); keep the loop
    "tie": (14, 56, [(14, 55), (14, 57)]),  # gap 0
}
RIGHT, LEFT = ("ArrowRight", 39), ("ArrowLeft", 37)


@pytest.fixture
def page(tmp_path):
    result, evidence = compute(synthetic_read(LOOPS, control=[(3, 10), (5, 14)]))
    path = tmp_path / "report.html"
    path.write_text(report_html.render(result, evidence), encoding="utf-8")
    from kit.cdp import Browser

    browser = Browser(chromium(), str(tmp_path / "profile"))
    try:
        browser.open(path.as_uri())
        yield browser, path, result
    finally:
        browser.close()


def shown(browser) -> dict[str, str]:
    return browser.js("Object.fromEntries([...document.querySelectorAll('#verdicts tbody tr')].map("
                      "(r, i) => [r.dataset.loop, document.getElementById('verdict-' + i)"
                      ".textContent]))")


def expected(result, unit: str, line: float) -> dict[str, str]:
    lines = verdicts.Lines(Fraction(str(line)), Fraction(str(line)))
    return {lp["name"]: verdicts.verdict(lp["gap"], lp["practice"]["total"], lines)[unit]
            for lp in result["loops"]}


def test_the_report_loads_with_no_network_request(page):
    browser, path, _ = page
    assert browser.requests() == [path.as_uri()]
    assert browser.js("document.querySelectorAll('script[src], link[href], img[src]').length") == 0


def test_the_report_shows_every_loop_in_the_table_and_both_panels(page):
    browser, _, _ = page
    assert set(shown(browser)) == set(LOOPS)
    for panel in ("practice", "fresh"):
        labels = browser.js(f"[...document.querySelectorAll('#panel-{panel} text')]"
                            ".map(t => t.textContent)")
        assert set(LOOPS) | {"control"} <= set(labels)
    dots = browser.js("document.querySelectorAll('#panel-practice circle').length")
    assert dots == 3 + 3 + 2 + 2  # every rebuild and every control controller


def test_moving_the_flights_line_flips_verdicts_where_the_arithmetic_says(page):
    browser, _, result = page
    assert shown(browser) == expected(result, "flights", 2) == \
        {"wide": "flag", "narrow": "pass", "tie": "pass"}
    browser.js("document.getElementById('line').focus()")
    line = 2.0
    for _ in range(3):  # 2 -> 0.5: the one-flight gap is now over the line
        browser.key(*LEFT)
        line -= 0.5
        assert shown(browser) == expected(result, "flights", line)
    assert shown(browser)["narrow"] == "flag"
    for _ in range(5):  # 0.5 -> 3: a gap of 3 is not more than a line of 3
        browser.key(*RIGHT)
        line += 0.5
        assert shown(browser) == expected(result, "flights", line)
    assert browser.js("document.getElementById('line').value") == "3"
    assert shown(browser) == {"wide": "pass", "narrow": "pass", "tie": "pass"}


def test_the_percent_line_flips_the_one_flight_gap_between_6_and_6_5_percent(page):
    browser, _, result = page
    browser.js("document.getElementById('unit-percent').click()")
    assert browser.js("document.getElementById('line').value") == "5"
    assert shown(browser)["narrow"] == "flag"  # 6.25% is more than 5%
    browser.js("document.getElementById('line').focus()")
    line = 5.0
    seen = []
    for _ in range(4):
        browser.key(*RIGHT)
        line += 0.5
        assert shown(browser) == expected(result, "percent", line)
        seen.append((line, shown(browser)["narrow"]))
    assert seen == [(5.5, "flag"), (6.0, "flag"), (6.5, "pass"), (7.0, "pass")]


def test_ship_the_rebuild_follows_the_line_too(page):
    browser, _, _ = page
    ship = "document.getElementById('ship-0').textContent"
    assert browser.js(ship) == "yes"  # rebuilds' fresh median 51 vs the loop's 20: 31 > 8
    browser.js("const s = document.getElementById('line'); s.value = '8'; "
               "s.dispatchEvent(new Event('input'))")
    assert browser.js(ship) == "no"  # 8 of 16 scaled to 64 is 32: 31 is not more
