"""YAML that a user hands us (`plimsoll.yaml`, `squeeze.yaml`, an eval task's front matter, a
values file), read within bounds.

One loader and one error handler for every YAML file plimsoll-ci reads:

- `bounded_loader()`: a safe loader that counts, while composing, how deep the document nests and
  how many nodes it holds once every alias is expanded (within the `Bounds` of the read: `CONFIG`,
  64 levels and 100,000 values, for a configuration file; a values file passes its own), and
  refuses an alias to a node that contains it. An alias bomb (9 levels of 9 aliases: 9^9 nodes)
  or 5,000 levels of `[[[` stops at the line that crosses the bound, in milliseconds, before
  anything walks the tree; a recursive alias stops where it is used. Its events come from
  libyaml's parser when PyYAML was built with it (a values file may be 64 MiB), else from
  PyYAML's own; the nodes are composed here either way, never by libyaml's composer, which
  recurses in C without a bound (a million `[` crashed the process).
- `compose(text, origin, bounds)` (the node tree, for a reader that keeps every node's line),
  `load(text, origin, loader, bounds)` (constructed values, with the caller's constructors) and
  `load_lined(text, origin, check_key, bounds)` (every mapping a `LinedMap`, every sequence a
  `LinedSeq`: values that keep their lines, for errors that name them);
- `config_error(e, origin, text)`: a PyYAML error as the `ConfigError` (exit 2) every caller
  prints, `origin line N: problem; fix the YAML syntax`, N counted from 1 (line 1 when PyYAML
  gives no place).

PyYAML is imported when a YAML file is first read, never at import time (the hook's cold start).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from plimsoll_ci.errors import ConfigError

MAX_DEPTH = 64  # a job file or plimsoll.yaml nests 4 or 5 levels
MAX_NODES = 100_000  # nodes once aliases are expanded; a job of 1,000 controllers holds ~3,000


class Bounds(NamedTuple):
    """How deep a document may nest and how many values it may hold, aliases expanded."""

    depth: int = MAX_DEPTH
    nodes: int = MAX_NODES


CONFIG = Bounds()  # plimsoll.yaml, a squeeze job, an eval task's front matter


def bounded_loader() -> type:
    """The safe loader class that refuses nesting and alias expansion past its `bounds` and
    recursive aliases (`ConfigError` with a line; `origin` and `bounds` are the loader's
    attributes, set by `compose` and `load`). Its events come from libyaml when PyYAML has it."""
    import yaml

    return loader_class(getattr(getattr(yaml, "_yaml", None), "CParser", None) is not None)


@functools.cache
def loader_class(libyaml: bool) -> type:
    """`bounded_loader()` over libyaml's events (`libyaml`, when PyYAML was built with it) or over
    PyYAML's own parser: the same composing, bounds and errors (the problem's wording aside)."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    base: type = yaml.SafeLoader
    if libyaml:
        parser = yaml._yaml.CParser

        # (libyaml's parser class is found at run time: mypy cannot take it as a base)
        class _Events(Composer, parser, SafeConstructor, Resolver):  # type: ignore[misc, valid-type]
            """libyaml's events, composed here (its own composer is never called)."""

            def __init__(self, stream: Any) -> None:
                parser.__init__(self, stream)
                Composer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

        base = _Events

    class BoundedLoader(base):
        origin = "<yaml>"
        bounds = CONFIG

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
            if self._depth >= self.bounds.depth:
                raise self._refuse(line, f"nested more than {self.bounds.depth} levels deep; "
                                   "a configuration or a values file needs a few")
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
            if self._nodes > self.bounds.nodes:
                raise self._refuse(line, f"{what} expands the document past {self.bounds.nodes:,} "
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
        # The first such character is the one refused; libyaml gives a byte offset, PyYAML a
        # character index, so the line is found from the character itself.
        at = text.find(chr(e.character)) if isinstance(e.character, int) else -1
        line = text.count("\n", 0, at if at >= 0 else max(e.position, 0)) + 1
        problem = f"character {e.character!r} is not allowed in YAML"
    else:
        line, problem = 1, f"malformed YAML ({e.__class__.__name__})"
    return ConfigError(f"{origin} line {line}: {problem}; fix the YAML syntax")


def compose(text: str, origin: str, bounds: Bounds = CONFIG) -> Any:
    """The node tree of `text` (a `yaml.Node`, or None for an empty document), within `bounds`;
    `ConfigError` naming `origin` and the line."""

    return _run(bounded_loader(), text, origin, "get_single_node", bounds)


def load(text: str, origin: str, loader: type | None = None,
         bounds: Bounds = CONFIG) -> Any:
    """The value of `text`, constructed by `loader` (a subclass of `bounded_loader()` with
    the caller's constructors; default: the bounded loader itself) within `bounds`;
    `ConfigError` naming `origin` and the line."""

    cls = loader or bounded_loader()
    if not issubclass(cls, (bounded_loader(), loader_class(False))):
        raise TypeError("load() takes a subclass of yamlsafe.bounded_loader()")
    return _run(cls, text, origin, "get_single_data", bounds)


def _run(cls: type, text: str, origin: str, method: str, bounds: Bounds) -> Any:
    import yaml

    loader = None
    try:
        loader = cls(text)  # the reader checks every character here
        loader.origin, loader.bounds = origin, bounds
        return getattr(loader, method)()
    except yaml.YAMLError as e:
        raise config_error(e, origin, text) from None
    finally:
        if loader is not None:
            loader.dispose()


class LinedMap(dict):
    """A mapping as read, with where each part stood (lines from 1): `line`, its own; `lines`,
    a key -> its value's line; `key_lines`, a key -> the key's own line."""

    line = 0

    def __init__(self, items: Iterable[tuple[Any, Any]] = ()) -> None:
        super().__init__(items)
        self.lines: dict[Any, int] = {}
        self.key_lines: dict[Any, int] = {}


class LinedSeq(list):
    """A list as read, with `line` (its own) and `lines` (each item's), lines from 1."""

    line = 0

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.lines: list[int] = []


# check_key(key, line, twice) -> the error a key raises, or None: a key of a kind the reader
# does not take (twice False), or one given twice in one mapping (twice True)
KeyCheck = Callable[[Any, int, bool], Exception | None]


def load_lined(text: str, origin: str, check_key: KeyCheck, bounds: Bounds = CONFIG) -> Any:
    """The value of `text` with every mapping a `LinedMap` and every sequence a `LinedSeq`,
    within `bounds`; each key passes `check_key` (its kind first, then whether it was given
    twice), whose error is raised as it is."""
    import yaml

    # (a base made at run time: mypy cannot see its class)
    class Loader(bounded_loader()):  # type: ignore[misc]
        pass

    def construct_map(loader: Any, node: Any) -> LinedMap:
        loader.flatten_mapping(node)
        m = LinedMap()
        m.line = node.start_mark.line + 1
        for k_node, v_node in node.value:
            key = loader.construct_object(k_node, deep=True)
            line = k_node.start_mark.line + 1
            wrong = check_key(key, line, False) or (key in m and check_key(key, line, True))
            if wrong:
                raise wrong
            m[key] = loader.construct_object(v_node, deep=True)
            m.lines[key] = v_node.start_mark.line + 1
            m.key_lines[key] = line
        return m

    def construct_seq(loader: Any, node: Any) -> LinedSeq:
        s = LinedSeq()
        s.line = node.start_mark.line + 1
        for child in node.value:
            s.append(loader.construct_object(child, deep=True))
            s.lines.append(child.start_mark.line + 1)
        return s

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_map)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_seq)
    return load(text, origin, Loader, bounds)
