"""What a commit ships: its tree through its ship sets (or the external config's), as a map of
shipped files, and the deltas of that map from one commit to the next.

Glob sets are selected with `ship.select_repo_paths` (memoized per set and path: the same paths
recur in every commit); command sets are rebuilt by `ship.from_rev` in a throwaway checkout and
cached by the tree of their inputs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import PlimsollError
from plimsoll_ci.git import MODE_SUBMODULE, ZERO_OID, CatFile, TreeEntry, blob_id
from plimsoll_ci.gitlog import Change, Commit
from plimsoll_ci.history import configs
from plimsoll_ci.history.session import Session
from plimsoll_ci.shipscan import ship, shipconfig

CONFIG_NAME = os.fsencode(ship.CONFIG_NAME)

Tree = Mapping[bytes, TreeEntry | Change]  # path -> (mode, blob id); the judge only reads it
Selection = dict[bytes, tuple[str, str] | None]  # path -> (path as text, shipped path) or None


class Shipped(NamedTuple):
    """A shipped file as the replay keeps it."""

    oid: str  # content key: git blob id (builder output: the blob id git would give it)
    name: str  # the path as shipped (names are scanned on it)


ShipState = dict[tuple[str, str], Shipped]  # (set, label) -> what ships there


class Delta(NamedTuple):
    """One change of a ship state: what now ships at (set, label), or None when nothing does."""

    set: str
    label: str
    item: Shipped | None  # None: no longer shipped


class _Missing(Exception):
    """A config blob missing from the object store (a partial or damaged clone)."""


class Judge:
    """Turns a commit's tree into what its ship sets ship, with every cache that makes it cheap."""

    def __init__(self, session: Session) -> None:
        self.repo = session.repo
        self.external = session.external
        self.cache = session.cache
        self.notes = session.notes
        self.configs: dict[str, ship.Config | None] = {}  # config blob id -> Config | None
        self.selected: dict[ship.ShipSet, Selection] = {}
        self.built: dict[str, bytes] = {}  # builder output not yet scanned, by blob id
        self.prefix = ""  # an external config's globs apply from its folder in the repository
        if self.external is not None:
            self.prefix = ship.config_prefix(self.external, Path(self.repo.top))
        self._cat: CatFile | None = None
        self._sets: dict[int, tuple[ship.Config, list[ship.ShipSet]]] = {}  # by id(config)
        # the config of the commit before and its glob sets, and whether it has command sets
        # (most commits share their parent's config: two questions per commit, answered here)
        self._last: tuple[ship.Config | None, list[ship.ShipSet], bool] = (None, [], False)
        # where a commit's own config is remembered by content (none with --no-cache)
        self.memo = configs.repo_memos(
            self.repo.git_dir if session.options.use_cache else None)

    @property
    def cat(self) -> CatFile:
        """A `git cat-file --batch` for config blobs, started on first use."""
        if self._cat is None:
            self._cat = CatFile(self.repo)
        return self._cat

    def close(self) -> None:
        """End the git process (before any worker is forked: none may inherit its pipes)."""
        if self._cat is not None:
            self._cat.close()
            self._cat = None

    def config_at(self, commit: str, tree: Tree) -> tuple[str, ship.Config | None]:
        """(identity, Config or None) for a commit: the external config, or its own plimsoll.yaml."""
        if self.external is not None:
            return "external", self.external
        entry = tree.get(CONFIG_NAME)
        if entry is None or entry.mode == MODE_SUBMODULE:
            return "none", None
        if entry.oid not in self.configs:
            self.configs[entry.oid] = self._parse_config(commit, entry.oid)
        return entry.oid, self.configs[entry.oid]

    def _parse_config(self, commit: str, oid: str) -> ship.Config | None:
        """Commit `commit`'s config, blob `oid` (what it declares remembered by that id:
        `configs.declared`); None, noted, when it cannot be read or is not valid."""
        origin = f"{commit[:12]}:plimsoll.yaml"

        def text() -> str:
            blob = self.cat.read(oid)
            if blob is None:
                raise _Missing
            return blob.data.decode("utf-8")

        try:
            declared = configs.declared(oid, text, origin, self.memo)
            return shipconfig.anchor(declared, origin, Path(self.repo.top))
        except _Missing:
            self.notes.add(f"commit {commit[:12]}: plimsoll.yaml (blob {oid[:12]}) is "
                           "missing from the object store; that config is not applied")
        except UnicodeDecodeError:
            self.notes.add(f"commit {commit[:12]}: plimsoll.yaml is not UTF-8; commits "
                           "with this config are not judged")
        except PlimsollError as e:
            self.notes.add(f"{e}; commits with this config are not judged "
                           "(pass --config to judge them by another)")
        return None

    def _selection(self, ship_set: ship.ShipSet, paths: Iterable[bytes]) -> Selection:
        """A glob set's memo of repository path -> (path as text, shipped path) or None, with
        `paths` in it (the new ones selected together: globs compiled once, not per path).
        """
        sel = self.selected.get(ship_set)
        if sel is None:
            sel = self.selected[ship_set] = {}
        fresh = {p: os.fsdecode(p) for p in paths if p not in sel}
        if fresh:  # (most paths recur: their verdicts are memoized here)
            by_text = {text: p for p, text in fresh.items()}
            for p in fresh:
                sel[p] = None
            for path, rel in ship.select_repo_paths(list(by_text), ship_set, self.prefix):
                sel[by_text[path]] = (path, rel)
        return sel

    def full(self, commit: Commit, tree: Tree, cfg: ship.Config,
             previous: ShipState | None) -> ShipState:
        """Everything each ship set ships at `commit`."""
        state: ShipState = {}
        for s in cfg.ship.values():
            if s.command is not None:
                built = self._build(commit, tree, cfg, s)
                if built is None:  # the builder failed: keep what shipped before (noted)
                    for (name, label), item in (previous or {}).items():
                        if name == s.name:
                            state[(name, label)] = item
                    continue
                for path, oid in built:
                    state[(s.name, f"{s.name}:{path}")] = Shipped(oid, path)
                continue
            sel = self._selection(s, tree)
            for path_b, entry in tree.items():
                hit = sel[path_b]
                if hit is None:
                    continue
                if entry.mode == MODE_SUBMODULE:
                    self.notes.submodule(hit[0], commit.oid)
                    continue
                state[(s.name, hit[0])] = Shipped(entry.oid, hit[1])
        return state

    def incremental(self, commit: Commit, cfg: ship.Config, state: ShipState) -> list[Delta]:
        """Apply a commit's tree changes to the glob sets of `state` in place; return the deltas
        (the sets' rules are evaluated on the changed paths alone, and remembered by path).
        """
        deltas: list[Delta] = []
        changes = commit.changes
        if not changes:
            return deltas
        new = tuple.__new__  # (the records' own `__new__` is a Python call, per change)
        paths = [ch.path for ch in changes]
        for s in self._glob_sets(cfg):
            sel = self.selected.get(s)
            try:
                hits = [sel[p] for p in paths]  # type: ignore[index]  # (None: TypeError, below)
            except (KeyError, TypeError):  # a path (or the set) not seen yet
                sel = self._selection(s, paths)
                hits = [sel[p] for p in paths]
            name = s.name
            for ch, hit in zip(changes, hits, strict=True):
                if hit is None:
                    continue
                path = hit[0]
                key = (name, path)
                if ch.oid == ZERO_OID or ch.mode == MODE_SUBMODULE:
                    if ch.mode == MODE_SUBMODULE:
                        self.notes.submodule(path, commit.oid)
                    if state.pop(key, None) is not None:
                        deltas.append(new(Delta, (name, path, None)))
                    continue
                item = new(Shipped, (ch.oid, hit[1]))
                if state.get(key) != item:
                    state[key] = item
                    deltas.append(new(Delta, (name, path, item)))
        return deltas

    def _glob_sets(self, cfg: ship.Config) -> list[ship.ShipSet]:
        """`cfg`'s glob sets, in order (looked up once per config, not per commit)."""
        last = self._last
        if last[0] is cfg:
            return last[1]
        known = self._sets.get(id(cfg))
        if known is None or known[0] is not cfg:
            known = self._sets[id(cfg)] = (cfg, [s for s in cfg.ship.values()
                                                if s.command is None])
        self._last = (cfg, known[1], len(known[1]) != len(cfg.ship))
        return known[1]

    def builds(self, cfg: ship.Config) -> bool:
        """Whether `cfg` has a command set (rebuilt at every commit)."""
        if self._last[0] is not cfg:
            self._glob_sets(cfg)
        return self._last[2]

    def rebuild(self, commit: Commit, tree: Tree, cfg: ship.Config,
                state: ShipState) -> list[Delta]:
        """Rebuild the command sets of `state` in place at `commit`; return the deltas."""
        deltas: list[Delta] = []
        for s in cfg.ship.values():
            if s.command is None:
                continue
            built = self._build(commit, tree, cfg, s)
            if built is None:  # the builder failed: keep what shipped before (noted)
                continue
            new = {(s.name, f"{s.name}:{path}"): Shipped(oid, path) for path, oid in built}
            for key in [k for k in state if k[0] == s.name and k not in new]:
                del state[key]
                deltas.append(Delta(key[0], key[1], None))
            for key, item in new.items():
                if state.get(key) != item:
                    state[key] = item
                    deltas.append(Delta(key[0], key[1], item))
        return deltas

    def _inputs_key(self, commit: Commit, tree: Tree, s: ship.ShipSet) -> str:
        h = hashlib.sha256(repr(s.command).encode("utf-8") + b"\0")
        if not s.inputs:
            h.update(commit.tree.encode("ascii"))
            return h.hexdigest()
        paths = sorted(tree)
        sel = self._selection(ship.inputs_set(s), paths)
        for path_b in paths:
            if sel[path_b] is not None:
                e = tree[path_b]
                h.update(path_b + b"\0" + e.mode.encode() + e.oid.encode())
        return h.hexdigest()

    def _build(self, commit: Commit, tree: Tree, cfg: ship.Config,
               s: ship.ShipSet) -> list[tuple[str, str]] | None:
        """[(shipped path, blob id)] a command set ships at `commit`; cached by its inputs."""
        key = self._inputs_key(commit, tree, s)
        manifest = self.cache.builds.get(key)
        if manifest is not None and all(self.cache.knows(oid) or oid in self.built
                                        for _path, oid in manifest):
            return [(p, o) for p, o in manifest]
        try:
            files = ship.from_rev(Path(self.repo.top), commit.oid, cfg, set_name=s.name)
        except ship.BuilderFailed as e:
            first = str(e).splitlines()[0]
            self.notes.add(f"commit {commit.oid[:12]}: {first}; what set {s.name} shipped there "
                           "is taken to be what it shipped before")
            return None
        out = []
        for f in files:
            oid = blob_id(f.data)
            if not self.cache.knows(oid):
                self.built[oid] = f.data
            out.append((f.path, oid))
        self.cache.builds[key] = [[p, o] for p, o in out]
        self.cache.dirty = True
        return out
