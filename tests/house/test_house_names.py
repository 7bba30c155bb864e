"""Every name that reaches a terminal, a log or Markdown is escaped, by one pair of functions
(`plimsoll_ci.names`: `shown` for text, `md` for Markdown) that every printer calls."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from plimsoll_ci.names import md, shown

PACKAGE = Path(__file__).resolve().parents[2] / "plimsoll_ci"

# what must never reach a terminal or a report raw: C0 controls (LF, CR, ESC, NUL, ...), DEL, C1
# controls, line and paragraph separators, bidirectional overrides and isolates
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

SHOWN = [
    ("ESC (a colour, a cleared screen)", "a\x1b[31mred\x1b[2J", "a\\x1b[31mred\\x1b[2J"),
    ("a window title (OSC ... BEL)", "\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
    ("LF (a forged line)", "x\nplimsoll-ci squeeze: [9/9] FORGED verified",
     "x\\x0aplimsoll-ci squeeze: [9/9] FORGED verified"),
    ("CR (a line overwritten)", "ok\rFAILED", "ok\\x0dFAILED"),
    ("NUL", "a\x00b", "a\\x00b"),
    ("TAB", "a\tb", "a\\x09b"),
    ("DEL", "a\x7fb", "a\\x7fb"),
    ("C1 CSI and NEL", "a\x9b31mb\x85c", "a\\x9b31mb\\x85c"),
    ("a bidi override (U+202E)", "evil\u202egnp.py", "evil\\u202egnp.py"),
    ("a bidi isolate (U+2066..9)", "a\u2066b\u2069", "a\\u2066b\\u2069"),
    ("a line separator (U+2028)", "a\u2028b", "a\\u2028b"),
    ("a byte that is not UTF-8 (a surrogate escape)", "a\udcffb", "a\\xffb"),
    ("plain text and Markdown characters untouched", "rebuilds/c_1 | `x` #1 é", None),
]


@pytest.mark.parametrize("what, name, want", SHOWN, ids=[s[0] for s in SHOWN])
def test_shown_escapes_every_control_character_and_nothing_else(what, name, want):
    got = shown(name)
    assert got == (name if want is None else want)
    assert not RAW.search(got)
    assert shown(got) == got  # idempotent: nothing left to escape


MD = [
    ("a pipe (a table cell broken)", "a|b", "a\\|b"),
    ("a backtick (a code span)", "a`rm -rf`b", "a\\`rm -rf\\`b"),
    ("a link", "see [click](http://evil.example)", "see [click\\](http://evil.example)"),
    ("a reference link", "see [click][1]", "see [click\\][1]"),
    ("an image", "an ![x](y.png)", "an ![x\\](y.png)"),
    ("a link definition or a task box at the start", "[x]: http://e", "\\[x\\]: http://e"),
    ("the redaction marker reads as written", "seed-[withheld].json", "seed-[withheld].json"),
    ("raw HTML", "<img src=x onerror=alert(1)>", "\\<img src=x onerror=alert(1)\\>"),
    ("an entity that would decode to a bidi override", "&#x202e;", "\\&#x202e;"),
    ("emphasis and strikethrough", "*a* _b_ ~~c~~", "\\*a\\* \\_b\\_ \\~\\~c\\~\\~"),
    ("a backslash (an escape of its own)", "a\\|b", "a\\\\\\|b"),
    ("a leading # (a heading)", "# Verified", "\\# Verified"),
    ("a leading - (a list item)", "- [x] ok", "\\- [x] ok"),
    ("a leading number (an ordered list)", "1. first", "1\\. first"),
    ("a # inside stays", "loop#2", "loop#2"),
    ("ESC and LF: shown first, the escape's backslash escaped",
     "a\x1b[2J\n# b", "a\\\\x1b[2J\\\\x0a# b"),
    ("a bidi override", "x\u202ey", "x\\\\u202ey"),
    ("plain names untouched", "rebuilds/honest/h1.py", "rebuilds/honest/h1.py"),
]


@pytest.mark.parametrize("what, name, want", MD, ids=[m[0] for m in MD])
def test_md_keeps_a_name_one_line_of_plain_text_in_markdown(what, name, want):
    got = md(name)
    assert got == want
    assert not RAW.search(got) and "\n" not in got
    bare = got.replace("\\\\", "")
    assert not re.search(r"(?<!\\)[|`<>*]", bare) and not re.search(r"(?<!\\)\]\(", bare)


CODE = [
    ("a pipe", "a|b", "a\\|b"),
    ("a backtick ends no code span", "a`b", "a'b"),
    ("ESC and LF", "a\x1b\nb", "a\\x1b\\x0ab"),
    ("a bidi override", "a\u202eb", "a\\u202eb"),
]


@pytest.mark.parametrize("what, name, want", CODE, ids=[c[0] for c in CODE])
def test_md_inside_a_code_span_breaks_neither_the_span_nor_the_table(what, name, want):
    assert md(name, code=True) == want


def _functions() -> dict[str, str]:
    """Every function defined in the package: `module:function` -> its source."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = \
                    ast.get_source_segment(text, node) or ""
    return found


def test_names_are_escaped_by_one_pair_of_functions_not_copies():
    # a second Markdown escaper (a `replace("|", ...)` of its own) or a second control-character
    # table drifts from the first: it already did once (squeeze's report.md let ESC through)
    copies = sorted(name for name, src in _functions().items()
                    if not name.startswith("names.py:")
                    and ('replace("|"' in src or "\\x7f-\\x9f" in src))
    assert copies == []


def test_history_scan_and_squeeze_reports_call_the_same_functions():
    for module in ("shipscan/report.py", "history/render.py", "history/records.py",
                   "squeeze/report_md.py", "squeeze/progress.py", "evalharness/report.py",
                   "cli.py"):
        text = (PACKAGE / module).read_text()
        assert "plimsoll_ci.names import" in text, module
