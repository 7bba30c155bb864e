"""The parsed `plimsoll.yaml` the pre-commit hook remembers, by content, across clones.

A hook run reads the staged config; parsing it imports PyYAML and pathspec (about 40 ms, a
sixth of a cold run). What the text declares (`shipconfig.declare`) depends only on the text
and on the parser's code, so it is remembered, with the glob translations, under a name made of
the staged blob's id and a digest of the parser's files (ours, pathspec's translator, PyYAML's),
in the user's cache: a warm run, and the first run in a new clone of a config this user has
parsed before, skip the parse. The paths are resolved in each clone every time
(`shipconfig.anchor`), and `key.file` is checked against that clone.

A memo is trusted only when it and its folder belong to this user and nobody else may write
them, its first line is the SHA-256 of the rest, and it names the same staged blob and parser;
anything else (edited, cut, another's file, a link) is ignored and the config parsed again. The
cache is as trusted as the installed hook itself (pre-commit keeps that under the same
`~/.cache`); a parse error is never remembered.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from plimsoll_ci import git
from plimsoll_ci.shipscan import globs, ship, shipconfig


def memo_dir(fallback: Path | None) -> Path | None:
    """Where parsed configs are remembered: the user's cache (`$PLIMSOLL_CACHE`, else
    `$XDG_CACHE_HOME/plimsoll-ci`, else `~/.cache/plimsoll-ci`, as the sandbox's built roots),
    so a new clone of a config already seen is not parsed again; `fallback` (a folder under the
    repository's git folder) when that cache is not the user's own (see `_private`), or is
    named by a relative path (it would land in whatever folder the hook runs in)."""
    base = os.environ.get("PLIMSOLL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "plimsoll-ci")
    if not os.path.isabs(base):
        return fallback
    folder = Path(base) / "configs"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _private(folder.stat()):
            return folder
    except OSError:
        pass
    return fallback


def _private(st: os.stat_result) -> bool:
    """Whether a cache file or folder is this user's and nobody else may write it (a config
    remembered where another user can write is never trusted)."""
    uid = os.geteuid() if hasattr(os, "geteuid") else st.st_uid
    return st.st_uid == uid and not st.st_mode & 0o022


def _parser_version() -> str:
    """Changes whenever the config's reading does: our parser, pathspec's translator and
    PyYAML (by size and time of their files), found without importing either."""
    # (modules loaded from source files: each has a `__file__`)
    files = [Path(m.__file__) for m in (ship, shipconfig, globs)]  # type: ignore[arg-type]
    spec = importlib.util.find_spec("yaml")
    if spec is not None and spec.origin:
        files.append(Path(spec.origin))
    stats = []
    for f in (*files, *globs.translator_files()):
        try:
            st = f.stat()
            stats.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            stats.append(str(f))
    return hashlib.sha256("\0".join(stats).encode()).hexdigest()


def _declared_doc(d: shipconfig.Declared) -> dict:
    return {"withheld": d.withheld, "key_env": d.key_env, "key_file": d.key_file,
            "key_line": d.key_line, "mode": d.mode, "limits": d.limits,
            "ship": [[s.name, list(s.include), list(s.exclude),
                      s.command if isinstance(s.command, str | None) else list(s.command),
                      list(s.inputs), s.root, s.timeout, s.line, s.allow_empty]
                     for s in d.ship.values()]}


def _declared_from_doc(d: dict) -> shipconfig.Declared:
    sets = {}
    for name, inc, exc, cmd, inputs, root, timeout, line, allow_empty in d["ship"]:
        sets[name] = ship.ShipSet(name, tuple(inc), tuple(exc),
                                  tuple(cmd) if isinstance(cmd, list) else cmd,
                                  tuple(inputs), root, timeout, line, bool(allow_empty))
    return shipconfig.Declared(d["withheld"], d["key_env"], d["key_file"], d["key_line"],
                               d["mode"], d["limits"], sets)


def _memo_body(staged: str, code: str, declared: shipconfig.Declared,
               rules: dict[str, globs.Rule]) -> bytes:
    """The one way a memo's JSON is written (the reader refuses any other bytes)."""
    return json.dumps({"config": staged, "parser": code, "declared": _declared_doc(declared),
                       "globs": {p: list(r) for p, r in rules.items()}}, sort_keys=True).encode()


def _read_memo(memo: Path, staged: str, code: str
               ) -> tuple[shipconfig.Declared, dict[str, globs.Rule]] | None:
    """A remembered config and its glob translations, or None unless the file is this user's
    alone, its first line is the SHA-256 of the rest, and the rest is exactly what `_write_memo`
    writes for this staged blob and this parser."""
    try:
        fd = os.open(memo, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not _private(os.fstat(fh.fileno())):
                return None
            digest, _, body = fh.read().partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() != digest:
            return None
        doc = json.loads(body)
        declared = _declared_from_doc(doc["declared"])
        rules = {str(p): (r[0], r[1]) for p, r in doc["globs"].items()}
        if _memo_body(staged, code, declared, rules) != body:
            return None
        return declared, rules
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _write_memo(memo: Path, staged: str, code: str, declared: shipconfig.Declared) -> None:
    """Remember a parsed config (its digest line, then the JSON); a failure only costs speed."""
    patterns = (p for s in declared.ship.values() for p in (*s.include, *s.exclude, *s.inputs))
    body = _memo_body(staged, code, declared, globs.translations(patterns))
    tmp = memo.with_suffix(f".tmp{os.getpid()}")
    try:
        memo.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0),
                     0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, memo)
        prune(memo.parent, "config-*.json", keep=32)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def staged_config(repo: Path, path: Path, entries: Sequence[git.FileEntry] | None,
                  fallback: Path | None) -> ship.Config:
    """`ship.config_at(repo, path, ":")`, remembered by the staged blob's id (from `entries`,
    the index as `git.index_entries` lists it, listed here when None) with the
    translations of its globs, in `memo_dir`: a warm hook, and the first hook in a new clone of
    a config this user has seen, neither imports nor runs the YAML parser, nor imports pathspec.
    What is remembered is what the text declares (`shipconfig.declare`); its paths are
    resolved in this clone every time (`shipconfig.anchor`).
    """
    try:
        rel = path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return ship.config_at(repo, path, ":")
    staged = next((e.oid for e in (git.index_entries(repo) if entries is None else entries)
                   if e.path == rel and e.mode != git.MODE_SUBMODULE), None)
    folder = memo_dir(fallback) if staged is not None else None
    if staged is None or folder is None:
        return ship.config_at(repo, path, ":")
    origin = f"{rel} (staged)"
    declared = remembered(staged, folder, origin, lambda: shipconfig.config_text(
        git.read_blobs(repo, [staged])[staged], origin))
    config = shipconfig.anchor(declared, origin, path.resolve().parent, repo)
    return config._replace(path=path.resolve())


def remembered(oid: str, folder: Path, origin: str,
               text: Callable[[], str]) -> shipconfig.Declared:
    """What the config whose git blob id is `oid` declares: from its trusted memo in `folder`
    (its glob translations remembered too), else `shipconfig.declare(text(), origin)`, then
    written there. `text` is called only when the config must be parsed; its errors, and
    `ConfigError` naming `origin` and the line, reach the caller (and nothing is written)."""
    code = _parser_version()
    tag = hashlib.sha256(f"{oid}\0{code}".encode()).hexdigest()
    memo = folder / f"config-{tag[:32]}.json"
    found = _read_memo(memo, oid, code)
    if found is not None:
        declared, rules = found
        globs.remember(rules)
        return declared
    declared = shipconfig.declare(text(), origin)
    _write_memo(memo, oid, code, declared)
    return declared


def prune(folder: Path, pattern: str, keep: int) -> None:
    """Drop all but the `keep` newest files of `folder` named like `pattern` (memos, the hook's
    clean-content caches: other configs, sets, older versions)."""
    try:
        found = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[keep:]:
            old.unlink()
    except OSError:
        pass
