"""The set file's canonical text: exactly `json.dumps(doc, indent=2, sort_keys=True)` plus a
newline, however it is written (the writer is a fast one, so a 1M-entry set is written in
seconds)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from plimsoll_ci.withheld import build_set, dumps

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_dumps_writes_what_json_dumps_writes(doc):
    assert dumps(doc) == json.dumps(doc, indent=2, sort_keys=True) + "\n"


def test_dumps_of_a_real_set_is_json_dumps():
    doc, _ = build_set([("seeds.txt:1", "3107713414"), ("t.txt:1", "Drone Answer Key"),
                        ("t.txt:2", "31.5")], [("f.csv", b"a,b\n")],
                       [("g.py", b"def f(a, b):\n    return a * 3 + b // 7 - a ** 2\n" * 4)],
                       key=b"k")
    assert dumps(doc) == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    assert json.loads(dumps(doc)) == doc
