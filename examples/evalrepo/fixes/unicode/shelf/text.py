"""URL slugs for titles: `The Name of the Rose` -> `the-name-of-the-rose`."""

from __future__ import annotations

import re
import unicodedata

_NOT_WORD = re.compile(r"[\W_]+")


def _fold(char: str) -> str:
    """A letter without its accent when its base letter is ASCII (é -> e, ü -> u), else as is
    (й stays й: dropping its mark would make another letter)."""
    base = unicodedata.normalize("NFKD", char)[0]
    return base if base.isascii() else char


def slugify(title: str, max_length: int = 60) -> str:
    """A title as a URL slug: letters and digits (accents dropped), words joined by dashes."""
    folded = "".join(_fold(char) for char in unicodedata.normalize("NFC", title)).lower()
    slug = _NOT_WORD.sub("-", folded).strip("-")
    return slug[:max_length].rstrip("-")
