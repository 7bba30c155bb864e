"""No-break spaces in a large buffer are two plain spaces to the matcher, found from their lead
bytes one by one when there are few (`©`, `°` and no no-break space is the common case) and in
one pass when there are many (text in another script)."""

from __future__ import annotations

import random

import pytest

from plimsoll_ci.match import classes

NBSP = "\xa0".encode()


@pytest.mark.parametrize("leads", [0, 1, 3, 255, 256, 257, 5000])
def test_no_break_spaces_become_two_spaces_and_leave_no_class(leads: int) -> None:
    rng = random.Random(leads)
    pieces = [rng.choice(["alpha ", "31.5 ", "©", "°", "Ā", "\xa0", "x\xa0y"])
              for _ in range(leads)] + ["tail \xc2"]  # (a lead byte at the very end)
    rng.shuffle(pieces[:-1])
    buf = "".join(pieces).encode("utf-8", "surrogateescape")[:-1] + b"\xc2"
    cl = classes.byte_classes(buf)
    flat, flat_cl = classes.no_nbsp(buf, cl)
    assert flat == buf.replace(NBSP, b"  ")
    want = classes.byte_classes(flat)
    assert flat_cl.padded.tolist() == want.padded.tolist()
    if NBSP not in buf:
        assert flat is buf and flat_cl is cl  # nothing to change: no copy
    else:
        assert cl.padded.tolist() != want.padded.tolist()  # the caller's classes untouched
    want.release()
