"""URL slugs for titles: `The Name of the Rose` -> `the-name-of-the-rose`."""

from __future__ import annotations

import re

_NOT_WORD = re.compile(r"[^a-z0-9]+")


def slugify(title: str, max_length: int = 60) -> str:
    """A title as a URL slug: ASCII letters and digits, words joined by dashes."""
    ascii_title = title.encode("ascii", "ignore").decode("ascii")
    slug = _NOT_WORD.sub("-", ascii_title.lower()).strip("-")
    return slug[:max_length].rstrip("-")
