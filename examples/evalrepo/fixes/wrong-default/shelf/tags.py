"""Tags on catalogue records: lower case, no duplicates, in the order they were added."""

from __future__ import annotations


def normalize(tag: str) -> str:
    """A tag as it is stored: trimmed, lower case, inner white space as single dashes."""
    return "-".join(tag.strip().lower().split())


def add_tag(tag: str, tags: list[str] | None = None) -> list[str]:
    """`tags` with `tag` added (once); a record without tags yet starts a new list."""
    if tags is None:  # a fresh list per call: a default list would be shared by every record
        tags = []
    tag = normalize(tag)
    if tag and tag not in tags:
        tags.append(tag)
    return tags


def merge(*groups: list[str]) -> list[str]:
    """All tags of several records, each once, in first-seen order."""
    merged: list[str] = []
    for group in groups:
        for tag in group:
            merged = add_tag(tag, merged)
    return merged
