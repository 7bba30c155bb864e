"""Named byte values of the matching code: no bare number stands for a character."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

ZERO, TWO, SEVEN, NINE = ord("0"), ord("2"), ord("7"), ord("9")
UPPER_A, UPPER_F, UPPER_Z = ord("A"), ord("F"), ord("Z")
LOWER_A, LOWER_E, LOWER_F, LOWER_Z = ord("a"), ord("e"), ord("f"), ord("z")
UPPER_E = ord("E")
SPACE, DOT, COLON, UNDERSCORE, COMMA = ord(" "), ord("."), ord(":"), ord("_"), ord(",")
FIVE = ord("5")
PLUS, MINUS, EQUALS = ord("+"), ord("-"), ord("=")
PERCENT, BACKSLASH, AMPERSAND, NEWLINE = ord("%"), ord("\\"), ord("&"), ord("\n")
CARRIAGE_RETURN = ord("\r")
DEL = 0x7F  # the last ASCII byte (not printable)
NON_ASCII = 0x80  # the first byte that is not ASCII: part of a UTF-8 encoded character
CASE_BIT = 0x20  # an upper-case ASCII letter with this bit set is its lower case
NBSP = b"\xc2\xa0"  # U+00A0 NO-BREAK SPACE in UTF-8: white space to the matcher
NBSP_LEAD, NBSP_TAIL = NBSP[0], NBSP[1]


def lazy_re(pattern: bytes) -> Callable[[], re.Pattern[bytes]]:
    """`pattern`, compiled on its first use: the matching modules compile none when imported
    (a warm hook run uses 3 of their 22 patterns)."""
    return functools.cache(lambda: re.compile(pattern))
