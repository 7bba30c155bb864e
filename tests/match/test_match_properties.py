"""Properties over random inputs: every spelling is found, nothing crashes, no false finding."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kit.scan import LeakGuard, make_set

from plimsoll_ci.match.canonical import classify
from plimsoll_ci.match.classes import COMPILED_FROM
from plimsoll_ci.shipscan import report
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.shipscan.scan import Scanner

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def int_spellings(draw):
    """(value, one supported spelling of it)."""
    n = draw(st.integers(min_value=10, max_value=10**12))
    d = str(n)
    k = draw(st.integers(min_value=0, max_value=len(d) - 1))
    mantissa = d[: len(d) - k] + ("." + d[len(d) - k :] if k else "")
    hexd = format(n, "x")
    forms = [
        d,
        "0x" + hexd, "0X" + hexd.upper(), "0x" + format(n, "_x"),
        "0o" + format(n, "o"), "0b" + format(n, "b"), "0b" + format(n, "_b"),
        format(n, "_"),
        f"{mantissa}e{k}", f"{mantissa}E+{k}", f"{d}0e-1", f"{d}00E-2",
    ]
    return d, draw(st.sampled_from(forms))


@st.composite
def decimal_spellings(draw):
    """(value, one supported spelling of it): trailing zeros, exponents, m:ss below an hour."""
    whole = draw(st.integers(min_value=0, max_value=3599))
    frac = draw(st.integers(min_value=1, max_value=999).filter(lambda f: f % 10))
    frac_s = str(frac).zfill(draw(st.integers(min_value=len(str(frac)), max_value=4)))
    frac_s = frac_s.rstrip("0")
    value = f"{whole}.{frac_s}"
    dec = Decimal(value)
    digits = (str(whole) + frac_s).lstrip("0")
    e = len(str(whole)) - 1 if whole else -(len(frac_s) - len(frac_s.lstrip("0")) + 1)
    sci = f"{digits[0]}.{digits[1:] or '0'}e{e}"
    forms = [
        value,
        value + "0" * draw(st.integers(min_value=1, max_value=4)),
        sci,
        f"{digits[0]}.{digits[1:]}E{e:+d}" if len(digits) > 1 else f"{digits}.0e{e}",
        f"{digits}e-{len(frac_s)}", f"{digits}0E-{len(frac_s) + 1}",
        f"{whole // 60}:{whole % 60:02d}.{frac_s}",
    ]
    spelling = draw(st.sampled_from(forms))
    if ":" not in spelling:
        assert Decimal(spelling) == dec
    return value, spelling


CONTEXTS = ["x = {};\n", "t={}s", "[{}]", "seed-{}.json", "{}", "a {}, b", "(v {})"]


@FAST
@given(int_spellings(), st.sampled_from(CONTEXTS), st.booleans())
def test_any_spelling_of_an_integer_is_found(pair, context, large):
    value, spelling = pair
    assert classify(spelling) == classify(value)
    _assert_found(value, context.format(spelling).encode(), large)


@FAST
@given(decimal_spellings(), st.sampled_from(CONTEXTS), st.booleans())
def test_any_spelling_of_a_decimal_is_found(pair, context, large):
    value, spelling = pair
    assert classify(spelling) == classify(value)
    _assert_found(value, context.format(spelling).encode(), large)


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
SPACE = st.sampled_from([" ", "  ", "\t", "\n", "\t\t", " \n", " \n\t ", "\r\n", "\n\n",
                         "\u00a0"])


@FAST
@given(st.lists(WORD, min_size=1, max_size=4), st.data(), st.booleans())
def test_any_capitalization_and_spacing_of_a_text_is_found(words, data, large):
    value = " ".join(words)
    if classify(value)[0] != "text":
        return  # a lone number is a number value (its own property)
    cased = [
        "".join(c.upper() if data.draw(st.booleans()) else c for c in w) for w in words
    ]
    gaps = [data.draw(SPACE) for _ in cased[1:]]
    spelling = cased[0] + "".join(g + w for g, w in zip(gaps, cased[1:], strict=True))
    _assert_found(value, f"before {spelling} after\n".encode(), large)


# (past COMPILED_FROM: the compiled passes take it, where they are built)
_FILLER = b"filler text, nothing to see; 12 0.5 x_1\n" * (COMPILED_FROM // 40 + 1)


def _assert_found(value: str, content: bytes, large: bool) -> None:
    wset = make_set([("v.txt:1", value)])
    if large:
        content = _FILLER + content + b"\n" + _FILLER
    found, notes = Scanner(wset).scan_content(content, "f.txt")
    assert "v.txt:1" in [f.entry for f in found]
    if len(value) >= 8:  # shorter random values meet counts and ids in any report by chance
        guard = LeakGuard([value])
        result = ScanResult(found, notes, 1, len(content))
        for fmt in report.FORMATS:
            guard.text(report.render(result, fmt), f"the {fmt} report")


# --- random inputs: no crash, no false finding --------------------------------------------------

_NO_DIGITS = bytes.maketrans(b"0123456789", b"abcdefghij")
_SCANNER_SEEDS: dict[int, Scanner] = {}


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4096), st.integers(min_value=1_000_000_000, max_value=9_999_999_999))
def test_random_bytes_never_crash_and_never_find_an_absent_seed(raw, seed):
    # Without ASCII digits the bytes hold no plain, hex, percent, entity or m:ss spelling of a
    # number; a base64 or compressed spelling would need a ~2^-80 coincidence.
    data = raw.translate(_NO_DIGITS)
    wset = make_set([("seeds.txt:1", str(seed))])
    scanner = Scanner(wset)
    found, notes = scanner.scan_file(data, "blob.bin")
    assert found == []
    assert all(isinstance(n, str) for n in notes)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=2000), st.text(max_size=60))
def test_random_text_and_names_never_crash_the_engine(text, name):
    wset = make_set()
    guard = LeakGuard()
    scanner = Scanner(wset)
    found, notes = scanner.scan_file(text.encode("utf-8", "surrogatepass"), name or "x")
    for n in notes:
        guard.text(n, "a note")
    assert all(f.entry in ("seeds.txt:2", "times.txt:1", "labels.txt:1") for f in found)


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=1, max_size=512))
def test_random_bytes_after_an_archive_or_stream_header_never_crash(tail):
    wset = make_set()
    scanner = Scanner(wset)
    for head in (b"\x1f\x8b\x08", b"BZh9", b"\xfd7zXZ\x00", b"\x78\x9c", b"PK\x03\x04",
                 b"PK\x05\x06", b"\0" * 257 + b"ustar"):
        scanner.scan_file(head + tail, "blob")
