"""YAML that a user hands us (`plimsoll.yaml`, `squeeze.yaml`, an eval task's front matter), read
within bounds.

One loader and one error handler for every YAML file plimsoll-ci reads as configuration:

- `bounded_loader()`: a `yaml.SafeLoader` subclass that counts, while composing, how deep the
  document nests (at most `MAX_DEPTH` levels) and how many nodes it holds once every alias is
  expanded (at most `MAX_NODES`), and refuses an alias to a node that contains it. An alias bomb
  (9 levels of 9 aliases: 9^9 nodes) or 5,000 levels of `[[[` stops at the line that crosses the
  bound, in milliseconds, before anything walks the tree; a recursive alias stops where it is used.
- `compose(text, origin)` (the node tree, for a reader that keeps every node's line) and
  `load(text, origin, loader)` (constructed values, with the caller's constructors);
- `config_error(e, origin)`: a PyYAML error as the `ConfigError` (exit 2) every caller prints,
  `origin line N: problem; fix the YAML syntax` (line 1 when PyYAML gives no place).

PyYAML is imported when a YAML file is first read, never at import time (the hook's cold start).
"""

from __future__ import annotations

import functools
from typing import Any

from plimsoll_ci.errors import ConfigError

MAX_DEPTH = 64  # a job file or plimsoll.yaml nests 4 or 5 levels
MAX_NODES = 100_000  # nodes once aliases are expanded; a job of 1,000 controllers holds ~3,000


@functools.cache
def bounded_loader() -> type:
    """The `yaml.SafeLoader` subclass that refuses deep nesting, alias expansion past
    `MAX_NODES` and recursive aliases (`ConfigError` with a line; `origin` is the loader's
    `origin` attribute, set by `compose` and `load`)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        origin = "<yaml>"

        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._depth = 0
            self._nodes = 0
            # node id -> nodes under it, aliases expanded; absent while the node is composed
            self._weights: dict[int, int] = {}

        def _refuse(self, line: int, problem: str) -> ConfigError:
            return ConfigError(f"{self.origin} line {line}: {problem}")

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                anchor = event.anchor
                target = self.anchors.get(anchor)
                if target is not None and id(target) not in self._weights:
                    raise self._refuse(line, f"alias *{anchor} is used inside the node it "
                                       "names (a recursive alias); remove it")
                weight = self._weights.get(id(target), 0)
                node = super().compose_node(parent, index)
                self._count(weight, line, f"alias *{anchor}")
                return node
            if self._depth >= MAX_DEPTH:
                raise self._refuse(line, f"nested more than {MAX_DEPTH} levels deep; a "
                                   "configuration needs a few")
            self._depth += 1
            before = self._nodes
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            self._count(1, line, "this value")
            self._weights[id(node)] = self._nodes - before
            return node

        def _count(self, weight: int, line: int, what: str) -> None:
            self._nodes += weight
            if self._nodes > MAX_NODES:
                raise self._refuse(line, f"{what} expands the document past {MAX_NODES:,} "
                                   "values (aliases are expanded where used); write the "
                                   "values out, without aliases that multiply")

    return BoundedLoader


def config_error(e: Exception, origin: str, text: str = "") -> ConfigError:
    """The `ConfigError` for a PyYAML error `e` in `origin` (whose `text` places a character
    PyYAML refuses), with the line it names, else line 1."""
    import yaml

    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        problem = e.problem or e.context or "malformed YAML"
    elif isinstance(e, yaml.reader.ReaderError):
        line = text.count("\n", 0, max(e.position, 0)) + 1
        problem = f"character {e.character!r} is not allowed in YAML"
    else:
        line, problem = 1, f"malformed YAML ({e.__class__.__name__})"
    return ConfigError(f"{origin} line {line}: {problem}; fix the YAML syntax")


def compose(text: str, origin: str) -> Any:
    """The node tree of `text` (a `yaml.Node`, or None for an empty document), every bound kept;
    `ConfigError` naming `origin` and the line."""

    return _run(bounded_loader(), text, origin, "get_single_node")


def load(text: str, origin: str, loader_class: type | None = None) -> Any:
    """The value of `text`, constructed by `loader_class` (a subclass of `bounded_loader()` with
    the caller's constructors; default: the bounded loader itself); `ConfigError` naming `origin`
    and the line."""

    cls = loader_class or bounded_loader()
    if not issubclass(cls, bounded_loader()):
        raise TypeError("load() takes a subclass of yamlsafe.bounded_loader()")
    return _run(cls, text, origin, "get_single_data")


def _run(cls: type, text: str, origin: str, method: str) -> Any:
    import yaml

    loader = None
    try:
        loader = cls(text)  # the reader checks every character here
        loader.origin = origin
        return getattr(loader, method)()
    except yaml.YAMLError as e:
        raise config_error(e, origin, text) from None
    finally:
        if loader is not None:
            loader.dispose()
