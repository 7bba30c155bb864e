"""The number candidates of a buffer that takes the compiled passes (`_passes.number_candidates`,
in _numbers.c), for `extract`: the tables and numbers they read for an index, and the kinds of
candidate they hand back. Each candidate is then checked exactly by `extract`'s checks, those
`_numbers_small` (the pure-Python passes) uses."""

from __future__ import annotations


def _prefixed_min_digits(base: int, length: int) -> int:
    """The fewest digits in `base` that can write an integer of `length` decimal digits."""
    h = 1
    while len(str(base**h - 1)) < length:
        h += 1
    return h


# The compiled part's kinds of candidate (`_passes.number_candidates`, in _numbers.c).
GROUPED, PLAIN, TOKEN, CLOCK = 1, 2, 3, 4
_INTS, _DECIMALS, _CLOCKABLE, _GROUPED = 1, 2, 4, 8


def compiled_candidates(buf: bytes, cls, stop: int, index, grouped_from: int):  # noqa: ANN001, ANN201
    """With the compiled part: the number candidates of `buf` (`cls` its class bytes) that start
    before `stop`, as an int32 memoryview, (kind, start, end) after each other in buffer order:
    the runs `_numbers_small` would check, less those no entry's digit counts can equal.
    Comma-grouped integers are looked for when an integer entry has `grouped_from` digits or
    more."""
    from plimsoll_ci.match.classes import C_DIGIT, native

    luts, params = _compiled_rules(index, grouped_from, C_DIGIT)
    return memoryview(native.number_candidates(buf, cls, stop, luts, params)).cast("i")


def _compiled_rules(index, grouped_from: int, digit_bit: int) -> tuple[bytes, tuple]:  # noqa: ANN001
    """The tables and numbers the compiled candidates read for `index`, made once per index."""
    cached = getattr(index, "_number_rules", None)
    if cached is not None:
        return cached
    int_lut, sig_lut = bytearray(256), bytearray(256)
    for n in index.int_lengths:
        int_lut[min(n, 255)] = 1
    for n in index.sigs:
        sig_lut[min(n, 255)] = 1
    flags = (_INTS if index.has_ints else 0) | (_DECIMALS if index.has_decimals else 0) \
        | (_CLOCKABLE if index.clockable else 0) \
        | (_GROUPED if index.has_ints and max(index.int_lengths) >= grouped_from else 0)
    need = tuple(min(_prefixed_min_digits(b, index.min_int_length), 64) if index.has_ints else 0
                 for b in (16, 8, 2))
    rules = (bytes(int_lut + sig_lut),
             (digit_bit, flags, index.min_int_length, min(index.min_sig, 2**31), *need))
    index._number_rules = rules
    return rules
