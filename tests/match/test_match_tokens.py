"""Token edges of docs/matching.md: numbers beside a colon (only a real clock is one token),
comma-grouped numbers, and underscores at a text value's ends. Each rule on the small (`re`) and
the large (compiled) path, with a case it must find and a case it must not."""

from __future__ import annotations

import pytest
from kit.scan import LeakGuard, make_set, scan_checked

from plimsoll_ci.match.classes import COMPILED_FROM

VALUES = [("ports.txt:1", "8080"), ("ports.txt:2", "80"), ("ports.txt:3", "22"),
          ("times.txt:1", "31.5"), ("seeds.txt:1", "4820193756"), ("sizes.txt:1", "4820"),
          ("names.txt:1", "_attrs_to_script"), ("names.txt:2", "__init__"),
          ("names.txt:3", "skip_"), ("names.txt:4", "drone answer")]

# (case, content, entry found)
FOUND = [
    ("host port of a quoted port mapping", b'ports:\n  - "8080:80"\n', "ports.txt:1"),
    ("container port of a quoted port mapping", b'ports:\n  - "8080:80"\n', "ports.txt:2"),
    ("number before a one-digit number", b"map 8080:5 ok", "ports.txt:1"),
    ("number before a three-digit number", b"map 80:443 ok", "ports.txt:2"),
    ("number after a number", b"map 12:8080 ok", "ports.txt:1"),
    ("number before a longer number", b"map 80:8080 ok", "ports.txt:2"),
    ("number before a bare colon", b"port 8080: open", "ports.txt:1"),
    ("port of a dotted address", b"ssh 10.0.0.1:22 -v", "ports.txt:3"),
    ("decimal after a number that is no clock", b"at 8080:31.5", "times.txt:1"),
    ("a clock", b"at 0:31.5 the drone", "times.txt:1"),
    ("a clock with hours", b"at 0:00:31.5", "times.txt:1"),
    ("number grouped with commas", b"seed 4,820,193,756 here", "seeds.txt:1"),
    ("grouped number in brackets", b"seed (4,820,193,756).", "seeds.txt:1"),
    ("grouped number with a sign", b"x=-4,820,193,756;", "seeds.txt:1"),
    ("name with a leading underscore", b"obj._attrs_to_script(x)", "names.txt:1"),
    ("name after a second underscore", b"obj.__attrs_to_script", "names.txt:1"),
    ("name with underscores both ends", b"def __init__(self):", "names.txt:2"),
    ("name with a trailing underscore", b"skip_ = 1", "names.txt:3"),
    ("text whose ends are letters, beside underscores", b"_drone answer_", "names.txt:4"),
]

NOT_FOUND = [
    ("minutes of a clock", b"at 1:22:33 ok", "ports.txt:3"),
    ("seconds of a clock", b"at 1:31.5", "times.txt:1"),
    ("two numbers that read as a clock (80 min 22 s)", b"map 80:22", "ports.txt:3"),
    ("a longer number before a colon", b"18080:80", "ports.txt:1"),
    ("two numbers with one comma (a list)", b"[4,820]", "sizes.txt:1"),
    ("a grouped number with a long last group", b"4,820,193,7560", "seeds.txt:1"),
    ("a grouped number with a longer first group", b"14,820,193,756", "seeds.txt:1"),
    ("a grouped number with a short group", b"4,820,193,75", "seeds.txt:1"),
    ("a grouped number with a space", b"4, 820, 193, 756", "seeds.txt:1"),
    ("a name without its leading underscore", b"attrs_to_script(x)", "names.txt:1"),
    ("a name with its underscore elsewhere", b"attrs_to_script_", "names.txt:1"),
    ("a name without its underscores", b"def init(self):", "names.txt:2"),
    ("a name with one of two underscores", b"_init_", "names.txt:2"),
    ("a name without its trailing underscore", b"skip = 1", "names.txt:3"),
]

FILLER = b"filler line with words, 17 numbers 0.25 and 3:4 x_y 1_0 ok\n" \
    * (COMPILED_FROM // 58 + 1)


@pytest.fixture(scope="module")
def wset():
    return make_set(VALUES)


@pytest.fixture
def guard():
    return LeakGuard(v for _, v in VALUES if len(v) > 4)


def _sized(data: bytes, size: str) -> bytes:
    return FILLER + data + b"\n" + FILLER if size == "large" else data


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(("data", "entry"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_a_whole_token_is_found(wset, guard, data, entry, size):
    result = scan_checked([("a.txt", _sized(data, size))], wset, guard)
    assert entry in [f.entry for f in result.findings]


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize(("data", "entry"), [c[1:] for c in NOT_FOUND],
                         ids=[c[0] for c in NOT_FOUND])
def test_a_piece_of_a_token_is_not_found(wset, guard, data, entry, size):
    result = scan_checked([("a.txt", _sized(data, size))], wset, guard)
    assert entry not in [f.entry for f in result.findings]


def test_a_port_mapping_finds_both_ports_at_their_columns(wset, guard):
    result = scan_checked([("compose.yml", b'ports: "8080:80"\n')], wset, guard)
    assert sorted((f.entry, f.column) for f in result.findings) == [
        ("ports.txt:1", 9), ("ports.txt:2", 14)]


def test_a_clock_is_one_token_its_parts_are_not(wset, guard):
    # 1:22:33 is a clock (4953 s): neither 22 nor 33 is a whole token of it
    result = scan_checked([("log.txt", b"t 1:22:33\n")], wset, guard)
    assert result.findings == []


def test_the_column_of_a_name_with_a_leading_underscore_points_at_the_underscore(wset, guard):
    result = scan_checked([("a.py", b"x = obj._attrs_to_script()\n")], wset, guard)
    assert [(f.entry, f.line, f.column) for f in result.findings] == [("names.txt:1", 1, 9)]


def test_a_set_built_from_an_underscored_value_stores_the_underscores_in_its_shape():
    from plimsoll_ci.match.canonical import classify

    assert classify("_attrs_to_script") == ("text", b"_attrs_to_script")
    assert classify('"__init__",') == ("text", b"__init__")
    assert classify("(drone answer)") == ("text", b"drone answer")
    assert classify("_.drone_") == ("text", b"drone_")
    [entry] = make_set([("n:1", "__init__")]).entries
    assert (entry.shape["lead"], entry.shape["trail"]) == (2, 2)
    [plain] = make_set([("n:1", "drone answer")]).entries
    assert "lead" not in plain.shape and "trail" not in plain.shape  # old sets stay as they were
