"""Ship-set globs: gitignore's rules, as git's wildmatch has them.

Each pattern is translated into a regular expression by pathspec (`GitIgnoreSpec`, tested
against git's own wildmatch cases), and `Globs.match` decides a path exactly as pathspec's
`GitIgnoreSpec` does with its pure-Python backend: the last pattern that matches the path
itself decides; a pattern that matches only through a folder above the path (a directory
pattern, its `ps_d` group) decides when no pattern matches the path itself.

The pure-Python match keeps paths that are not UTF-8 (surrogate escapes) working: pathspec's
Hyperscan and RE2 backends, picked by itself when importable, encode each path as strict UTF-8.

pathspec is imported only to translate a pattern: importing it costs 25-40 ms (its package
loads every backend it has), a sixth of a warm pre-commit hook. A translation depends only on
the pattern and on pathspec's code, so the hook keeps its config's translations beside the parsed
config (`translations`, `remember`, keyed by `translator_files`) and a warm hook never imports
pathspec.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

DIR_MARK = "ps_d"  # pathspec's group for the folder a directory pattern matched through

Rule = tuple[str | None, bool | None]  # (regular expression, include); (None, None): a no-op

_TRANSLATED: dict[str, Rule] = {}


def translations(patterns: Iterable[str]) -> dict[str, Rule]:
    """pathspec's translation of each pattern (blank ones are no-ops and left out); ValueError
    for a pattern git would not take (a trailing `\\`)."""
    wanted = [p for p in dict.fromkeys(patterns) if p]
    missing = [p for p in wanted if p not in _TRANSLATED]
    if missing:
        from pathspec import GitIgnoreSpec  # only here: see the module's docstring

        compiled = GitIgnoreSpec.from_lines(missing, backend="simple").patterns
        for p, pat in zip(missing, compiled, strict=True):
            regex = pat.regex.pattern if pat.regex is not None else None
            _TRANSLATED[p] = (regex, pat.include)
    return {p: _TRANSLATED[p] for p in wanted}


def remember(rules: Mapping[str, Sequence]) -> None:
    """Take translations made earlier by the same pathspec code (a cache of `translations`)."""
    for p, (regex, include) in rules.items():
        _TRANSLATED[p] = (regex, include)


def translator_files() -> list[Path]:
    """pathspec's files a translation depends on, found without importing pathspec (a cache of
    translations keys on their size and time)."""
    spec = importlib.util.find_spec("pathspec")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    return [root / "_version.py", root / "pattern.py",
            *sorted((root / "patterns").glob("**/*.py"))]


class Globs:
    """Compiled gitignore patterns; `match(path)` says whether they select a `/`-separated path
    relative to where they apply."""

    def __init__(self, patterns: Sequence[str]) -> None:
        rules = translations(patterns)
        # last pattern first: the last one that matches decides
        self._rules = [(re.compile(regex), include) for regex, include in reversed(
            [rules[p] for p in patterns if p]) if include is not None and regex is not None]

    def match(self, path: str) -> bool:
        """Whether the patterns select `path` (a leading `/` or `./` is ignored, as pathspec
        does)."""
        if path.startswith("/"):
            path = path[1:]
        elif path.startswith("./"):
            path = path[2:]
        through_folder: bool | None = None
        for regex, include in self._rules:
            m = regex.search(path)
            if m is None:
                continue
            if not m.groupdict().get(DIR_MARK):
                return include  # the path itself matched: the last such pattern decides
            if through_folder is None:
                through_folder = include
        return bool(through_folder)
