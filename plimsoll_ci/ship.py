"""What a harness ships: `plimsoll.yaml` -> named ship sets -> the (path, bytes) that enter a sandbox.

Public API (used by `plimsoll-ci scan --config`, `ship list`, the hook, the action and `history`):

Config
    `find_config(start) -> Path | None`            plimsoll.yaml at the git repository root
                                                   (or, outside git, in `start` or a parent).
    `load_config(path) -> Config`                  read and validate; `ConfigError` (exit 2) names
                                                   the file and line: `plimsoll.yaml line 7:
                                                   ship.viewer.include must be a list of globs`.
    `parse_config(text, origin, base) -> Config`   the same from text; `base` is the config's folder.
    `Config` fields: path, base, withheld (Path | None), key_env, key_file, mode (refuse|warn),
    limits (dict name -> int, handed to `scan.Limits`), ship (dict name -> ShipSet).
    `load_key(config) -> bytes | None`, `load_withheld(config, key=...) -> WithheldSet`.

Ship sets
    `ShipSet(name, include, exclude, command, inputs, root, timeout, line)`: globs
    (gitignore-style: `*`, `?`, `[..]`, `**`; a pattern without `/` matches at any depth; a pattern
    that names a folder ships everything under it; a trailing `/` matches folders only) or a
    `command` that builds the shipped folder, run with `{out}` replaced by an empty temporary folder
    (a string runs through `sh -c` with `{out}` shell-quoted; a list runs without a shell).
    With a command, include/exclude filter the builder's output; `inputs` (globs) say which
    repository files the builder reads (the hook re-runs it only when one of them changes;
    default: any file).
    `select(paths, ship_set) -> list[str]`         the paths a glob set ships, input order kept.
    `select_repo_paths(paths, ship_set, prefix)`   (repository path, shipped path) pairs of a glob
                                                   set, from the config's folder `prefix`
                                                   (`config_prefix(config, repo)`) and its root.
    `inputs_set(ship_set) -> ShipSet`              a command set's `inputs:` as a glob set.

Sources (each returns `list[ShippedFile]`, sorted by set then path)
    `from_worktree(root, config, set_name=None)`   files on disk under `root` (default
                                                   `config.base`), untracked files included.
    `from_index(repo_root, config, set_name=None)` the staged blobs (`git ls-files -s` +
                                                   `git cat-file --batch`), never the working tree.
    `from_rev(repo_root, rev, config, set_name=None)` the tree of a commit.
    A command set at the index or a commit runs its builder in a temporary checkout of that tree
    (`git.checkout`: the blobs written as committed, no filter run), never in the user's working
    tree.
    `build_command_set(ship_set, tree_dir, env=None) -> list[(path, bytes)]` runs one builder with
    cwd `tree_dir` (the config's folder inside a checkout); reusable by history. A builder that
    fails raises `BuilderFailed` carrying its exit code and output; the CLI exits with that code.
    With `read=False`, `from_index`/`from_rev` leave glob-set data empty and carry blob ids (the
    hook reads only blobs it has not judged clean); `git.read_blobs(repo, oids)` reads them.
    `config_at(repo, config_path, rev)` reads the config as staged (`rev=":"`) or committed.
    `collect(config_path, set_name, staged, rev, cwd) -> (Config, list[ShippedFile])` is the one
    call behind `scan --config` and `ship list`; without `config_path` it uses the repository
    root's `plimsoll.yaml` in the version being judged (staged, or at `rev`).

`ShippedFile(set_name, path, data, source, blob)`: `path` is the path as shipped (relative to the
ship root; names are scanned on this), `source` the repository path it came from (None for builder
output), `blob` the git object id when read from git (a cache key). `label(f)` is how a finding
shows the file: the repository path for a glob set, `SET:path` for builder output.

Paths in the config are relative to the config file's folder unless absolute. When the config lies
outside the repository (an auditor's external config), ship globs apply from the repository root.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci import git, withheld
from plimsoll_ci.errors import BadInput, ConfigError, PlimsollError
from plimsoll_ci.scan import Item

CONFIG_NAME = "plimsoll.yaml"
DEFAULT_TIMEOUT = 600.0
_SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP_KEYS = ("withheld", "key", "ship", "mode", "limits")
_SET_KEYS = ("include", "exclude", "command", "inputs", "root", "timeout", "description")


class ShipSet(NamedTuple):
    """One named ship set from `plimsoll.yaml`."""

    name: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    command: str | tuple[str, ...] | None = None
    inputs: tuple[str, ...] = ()
    root: str = ""  # folder (relative to the config's folder) whose contents ship; "" = that folder
    timeout: float = DEFAULT_TIMEOUT
    line: int = 0  # line of the set in the config, for messages


class Config(NamedTuple):
    """A parsed `plimsoll.yaml`."""

    path: Path
    base: Path
    withheld: Path | None
    key_env: str | None
    key_file: Path | None
    mode: str
    limits: dict[str, float]
    ship: dict[str, ShipSet]


class ShippedFile(NamedTuple):
    """One file as it would enter a sandbox."""

    set_name: str
    path: str
    data: bytes
    source: str | None = None
    blob: str | None = None


class BuilderFailed(PlimsollError):
    """A ship set's builder command exited non-zero or timed out; never treated as a pass."""

    def __init__(self, set_name: str, code: int, output: str, where: str = "") -> None:
        tail = output[-4000:]
        msg = (f"ship set {set_name}: builder exited with code {code}{where}; "
               f"fix the builder (its output follows)\n{tail}")
        super().__init__(msg)
        self.set_name = set_name
        self.output = output
        self.exit_code = code if 0 < code < 256 else 2


# --------------------------------------------------------------------------- config


class _Map(dict):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[Any, int] = {}  # key -> line of its value
        self.key_lines: dict[Any, int] = {}  # key -> line of the key itself


class _Seq(list):
    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []


def _yaml_load(text: str, origin: str) -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Map:
        loader.flatten_mapping(node)
        m = _Map()
        m.line = node.start_mark.line + 1
        for k_node, v_node in node.value:
            key = loader.construct_object(k_node, deep=True)
            kline = k_node.start_mark.line + 1
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise ConfigError(f"{origin} line {kline}: keys must be plain names")
            if key in m:
                raise ConfigError(f"{origin} line {kline}: duplicate key {key!r}; keep one")
            m[key] = loader.construct_object(v_node, deep=True)
            m.lines[key] = v_node.start_mark.line + 1
            m.key_lines[key] = kline
        return m

    def construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> _Seq:
        s = _Seq()
        s.line = node.start_mark.line + 1
        for child in node.value:
            s.append(loader.construct_object(child, deep=True))
            s.lines.append(child.start_mark.line + 1)
        return s

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_map)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_seq)
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 0
        problem = e.problem or e.context or "malformed YAML"
        raise ConfigError(f"{origin} line {line}: {problem}; fix the YAML syntax") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{origin}: malformed YAML ({e.__class__.__name__})") from None


def _line_of(m: Any, key: Any) -> int:
    if isinstance(m, _Map):
        return m.lines.get(key, m.line)
    return 0


def _str_list(value: Any, origin: str, line: int, what: str, kind: str = "globs") -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{origin} line {line}: {what} must be a list of {kind}")
    for i, v in enumerate(value):
        where = value.lines[i] if isinstance(value, _Seq) else line
        if v.startswith("!"):
            raise ConfigError(f"{origin} line {where}: {what}: negated pattern {v!r} is not "
                              "supported; put it in exclude")
        try:
            _spec([v])
        except ValueError:
            raise ConfigError(f"{origin} line {where}: {what}: {v!r} is not a valid glob") from None
    return tuple(value)


def _relpath_ok(value: str) -> bool:
    parts = Path(value).parts
    return not Path(value).is_absolute() and ".." not in parts


def parse_config(text: str, origin: str, base: Path) -> Config:
    """Parse `plimsoll.yaml` text; `origin` names it in messages, `base` is its folder."""
    base = Path(base).resolve()
    doc = _yaml_load(text, origin)
    if doc is None:
        doc = _Map()
    if not isinstance(doc, _Map):
        raise ConfigError(f"{origin} line 1: the top level must be a mapping "
                          f"(keys: {', '.join(_TOP_KEYS)})")
    for key in doc:
        if key not in _TOP_KEYS:
            raise ConfigError(f"{origin} line {_line_of(doc, key)}: unknown key {key!r}; "
                              f"expected one of {', '.join(_TOP_KEYS)}")

    withheld = None
    if doc.get("withheld") is not None:
        w = doc["withheld"]
        if not isinstance(w, str) or not w:
            raise ConfigError(f"{origin} line {_line_of(doc, 'withheld')}: withheld must be the "
                              "path of a withheld set (e.g. withheld.json)")
        withheld = (base / w).resolve()

    key_env = key_file = None
    if doc.get("key") is not None:
        k = doc["key"]
        line = _line_of(doc, "key")
        if not isinstance(k, _Map) or len(k) != 1 or next(iter(k)) not in ("env", "file"):
            raise ConfigError(f"{origin} line {line}: key must be {{env: VARIABLE}} or "
                              "{file: PATH} (a file outside the repository)")
        kind, value = next(iter(k.items()))
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{origin} line {_line_of(k, kind)}: key.{kind} must be a string")
        if kind == "env":
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
                raise ConfigError(f"{origin} line {_line_of(k, kind)}: key.env must be an "
                                  "environment variable name, not the key itself")
            key_env = value
        else:
            key_file = (base / os.path.expanduser(value)).resolve()
            repo = git.toplevel(base)
            if repo is not None and key_file.is_relative_to(repo):
                raise ConfigError(f"{origin} line {_line_of(k, kind)}: key.file {value} is inside "
                                  f"the repository {repo}; keep the key outside it "
                                  "(or use key: {env: VARIABLE})")

    mode = doc.get("mode", "refuse")
    if mode not in ("refuse", "warn"):
        raise ConfigError(f"{origin} line {_line_of(doc, 'mode')}: mode must be refuse or warn")

    limits: dict[str, float] = {}
    if doc.get("limits") is not None:
        lim = doc["limits"]
        if not isinstance(lim, _Map):
            raise ConfigError(f"{origin} line {_line_of(doc, 'limits')}: limits must be a mapping "
                              "of name: number (e.g. max_file_bytes: 50000000)")
        for name, value in lim.items():
            if not isinstance(name, str) or isinstance(value, bool) \
                    or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"{origin} line {_line_of(lim, name)}: limits.{name} must be a "
                                  "positive number")
            limits[name] = value

    ship: dict[str, ShipSet] = {}
    raw = doc.get("ship")
    if raw is not None:
        if not isinstance(raw, _Map):
            raise ConfigError(f"{origin} line {_line_of(doc, 'ship')}: ship must be a mapping of "
                              "set name to {include, exclude} or {command}")
        for name, body in raw.items():
            ship[str(name)] = _parse_set(str(name), body, origin, raw.key_lines[name])
    return Config(Path(origin) if not isinstance(origin, Path) else origin, base, withheld,
                  key_env, key_file, mode, limits, ship)


def _parse_set(name: str, body: Any, origin: str, line: int) -> ShipSet:
    where = f"ship.{name}"
    if not _SET_NAME.match(name):
        raise ConfigError(f"{origin} line {line}: ship set name {name!r} must be letters, digits, "
                          "'.', '_' or '-'")
    if not isinstance(body, _Map):
        raise ConfigError(f"{origin} line {line}: {where} must be a mapping with include/exclude "
                          "globs or a command")
    for key in body:
        if key not in _SET_KEYS:
            raise ConfigError(f"{origin} line {_line_of(body, key)}: {where}: unknown key {key!r}; "
                              f"expected one of {', '.join(_SET_KEYS)}")
    include = exclude = inputs = ()
    if "include" in body:
        include = _str_list(body["include"], origin, _line_of(body, "include"), f"{where}.include")
    if "exclude" in body:
        exclude = _str_list(body["exclude"], origin, _line_of(body, "exclude"), f"{where}.exclude")
    command: str | tuple[str, ...] | None = None
    if "command" in body:
        c = body["command"]
        cline = _line_of(body, "command")
        if isinstance(c, str) and c.strip():
            command = c
        elif isinstance(c, list) and c and all(isinstance(v, str) for v in c):
            command = tuple(c)
        else:
            raise ConfigError(f"{origin} line {cline}: {where}.command must be a command line "
                              "(string) or a list of arguments")
        text = command if isinstance(command, str) else " ".join(command)
        if "{out}" not in text:
            raise ConfigError(f"{origin} line {cline}: {where}.command must contain {{out}}, the "
                              "folder the builder writes the shipped files into")
    if "inputs" in body:
        if command is None:
            raise ConfigError(f"{origin} line {_line_of(body, 'inputs')}: {where}.inputs only "
                              "applies to a command set")
        inputs = _str_list(body["inputs"], origin, _line_of(body, "inputs"), f"{where}.inputs")
    if command is None and not include:
        raise ConfigError(f"{origin} line {line}: {where} needs include (a list of globs) or a "
                          "command that builds the shipped folder")
    root = ""
    if "root" in body:
        r = body["root"]
        if not isinstance(r, str) or not _relpath_ok(r):
            raise ConfigError(f"{origin} line {_line_of(body, 'root')}: {where}.root must be a "
                              "relative folder inside the config's folder")
        if command is not None:
            raise ConfigError(f"{origin} line {_line_of(body, 'root')}: {where}.root only applies "
                              "to a glob set (a command set ships its {out} folder)")
        root = Path(r).as_posix().strip("/")
        root = "" if root == "." else root
    timeout = DEFAULT_TIMEOUT
    if "timeout" in body:
        t = body["timeout"]
        if isinstance(t, bool) or not isinstance(t, int | float) or t <= 0:
            raise ConfigError(f"{origin} line {_line_of(body, 'timeout')}: {where}.timeout must be "
                              "a positive number of seconds")
        timeout = float(t)
    if "description" in body and not isinstance(body["description"], str):
        raise ConfigError(f"{origin} line {_line_of(body, 'description')}: {where}.description "
                          "must be text")
    return ShipSet(name, include, exclude, command, inputs, root, timeout, line)


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a `plimsoll.yaml`; `ConfigError` names the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file; create it or pass --config") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read the config ({e.__class__.__name__})") from None
    cfg = parse_config(text, str(p), p.resolve().parent)
    return cfg._replace(path=p.resolve())


def find_config(start: Path) -> Path | None:
    """`plimsoll.yaml` at the git repository root containing `start` (else `start` or a parent)."""
    start = Path(start).resolve()
    repo = git.toplevel(start)
    if repo is not None:
        p = repo / CONFIG_NAME
        return p if p.is_file() else None
    for folder in (start, *start.parents):
        p = folder / CONFIG_NAME
        if p.is_file():
            return p
    return None


def load_key(config: Config) -> bytes | None:
    """The HMAC key named by the config (`key: {env|file}`), or None when none is configured."""
    if config.key_env is None and config.key_file is None:
        return None
    return withheld.key_from(env=config.key_env,
                             file=str(config.key_file) if config.key_file else None)


def load_withheld(config: Config, key: bytes | None = None) -> withheld.WithheldSet:
    """Load the config's withheld set (with `key`, or the configured key when `key` is None)."""
    if config.withheld is None:
        raise ConfigError(f"{config.path}: no `withheld:` path; add `withheld: withheld.json`")
    return withheld.load(config.withheld, key=key if key is not None else load_key(config))


# --------------------------------------------------------------------------- globs


def _spec(patterns: Sequence[str]) -> Any:
    """Compiled gitignore globs (pathspec's `GitIgnoreSpec`: git's wildmatch rules, tested
    against git's own cases); ValueError for one git would not take (a trailing `\\`)."""
    from pathspec import GitIgnoreSpec  # imported when globs are first matched

    return GitIgnoreSpec.from_lines(patterns)


class _Matcher:
    """Compiled include/exclude lists; a path matches when it or one of its folders does."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.spec = _spec(patterns) if patterns else None

    def __call__(self, path: str) -> bool:
        return self.spec is not None and self.spec.match_file(path)


def select(paths: Iterable[str], ship_set: ShipSet) -> list[str]:
    """The paths (relative to the ship root, `/`-separated) that `ship_set` ships, order kept.

    A set without include (a command set with no filter) ships every path it is given.
    """
    inc = _Matcher(ship_set.include)
    exc = _Matcher(ship_set.exclude)
    out = []
    for p in paths:
        if ship_set.include and not inc(p):
            continue
        if exc(p):
            continue
        out.append(p)
    return out


def config_prefix(config: Config, repo: Path) -> str:
    """The config's folder relative to the repository root, with a trailing `/` ('' for the root,
    or for an external config outside the repository): where its globs apply from.
    """
    try:
        rel = config.base.relative_to(Path(repo).resolve())
    except ValueError:
        return ""
    s = rel.as_posix()
    return "" if s == "." else s + "/"




def select_repo_paths(paths: Iterable[str], ship_set: ShipSet,
                      prefix: str = "") -> list[tuple[str, str]]:
    """(repository path, shipped path) of each of `paths` that glob set `ship_set` ships, order
    kept. `prefix` is the config's folder in the repository (`config_prefix`); the set's `root`
    is below it, and a shipped path is relative to the two.
    """
    start = prefix + (ship_set.root + "/" if ship_set.root else "")
    by_rel = {p[len(start):]: p for p in paths if p.startswith(start)}
    return [(by_rel[rel], rel) for rel in select(by_rel, ship_set)]


def inputs_set(ship_set: ShipSet) -> ShipSet:
    """A command set's `inputs:` globs as a glob set over repository paths (what its builder
    reads; a change to one of them can change what it builds).
    """
    return ship_set._replace(include=ship_set.inputs, exclude=(), root="", command=None)


def label(f: ShippedFile) -> str:
    """How a finding names a shipped file: its repository path, or `SET:path` for builder output."""
    return f.source if f.source is not None else f"{f.set_name}:{f.path}"


def items(files: Iterable[ShippedFile]) -> list[Item]:
    """What `scan.ShipScan` takes: each file named by its `label`, its name checked as it ships,
    its content given or (read with `read=False`: empty data and a blob id) read by blob id."""
    return [Item(label(f), None if (f.blob not in (None, git.EMPTY_BLOB) and not f.data)
                 else f.data, f.path, f.blob) for f in files]


# --------------------------------------------------------------------------- sources


def _sets(config: Config, set_name: str | None) -> list[ShipSet]:
    if set_name is not None:
        if set_name not in config.ship:
            known = ", ".join(config.ship) or "none"
            raise BadInput(f"{config.path}: no ship set named {set_name!r} (sets: {known})")
        return [config.ship[set_name]]
    if not config.ship:
        raise ConfigError(f"{config.path}: no ship sets; add a `ship:` mapping "
                          "(name: {include: [globs]} or name: {command: ... {out}})")
    return list(config.ship.values())


def _walk(folder: Path) -> list[tuple[str, Path]]:
    """Every file under `folder` (no `.git`), as (relative path, absolute path), sorted.

    Folder symlinks are not descended (a loop cannot hang us); they are returned as entries whose
    content is the link text, so the link's name and target are still scanned.
    """
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        base = Path(dirpath)
        for d in list(dirnames):
            if (base / d).is_symlink():
                dirnames.remove(d)
                found.append(((base / d).relative_to(folder).as_posix(), base / d))
        for name in filenames:
            p = base / name
            found.append((p.relative_to(folder).as_posix(), p))
    found.sort()
    return found


MAX_READ = 1 << 30  # a shipped file is read up to 1 GiB (+1 byte, so the scan's bound still notes it)


def _read(p: Path, cap: int = MAX_READ) -> bytes:
    """A shipped file's bytes: a link to a regular file is read through (a builder's `cp -L`
    ships the target); a link to anything else, and a fifo, socket or device, ship as their name
    (and link text) only, so a FIFO or `/dev/zero` cannot hang or exhaust the scan.
    """
    try:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.stat(p)
            except OSError:
                return os.fsencode(os.readlink(p))
            if not stat.S_ISREG(target.st_mode):
                return os.fsencode(os.readlink(p))
        elif not stat.S_ISREG(st.st_mode):
            return b""
        with open(p, "rb") as fh:
            return fh.read(cap + 1)
    except OSError as e:
        raise BadInput(f"{p}: cannot read a shipped file ({e.strerror}); fix its permissions") \
            from None


def from_worktree(root: Path | None, config: Config, set_name: str | None = None) -> list[ShippedFile]:
    """What each ship set ships from the files on disk under `root` (default: the config's folder)."""
    root = Path(root or config.base).resolve()
    repo = git.toplevel(root) or root
    shown_prefix = config_prefix(config._replace(base=root), repo)
    files: list[ShippedFile] = []
    walked: list[tuple[str, Path]] | None = None
    for s in _sets(config, set_name):
        if s.command is not None:
            for path, data in build_command_set(s, root, env=_builder_env(config)):
                files.append(ShippedFile(s.name, path, data))
            continue
        if walked is None:
            walked = _walk(root)
        on_disk = dict(walked)
        for path, rel in select_repo_paths(on_disk, s):
            files.append(ShippedFile(s.name, rel, _read(on_disk[path]), source=shown_prefix + path))
    return files


def _from_entries(repo: Path, entries: list[git.FileEntry], config: Config,
                  set_name: str | None, what: str, read: bool = True) -> list[ShippedFile]:
    prefix = config_prefix(config, repo)
    files: list[ShippedFile] = []
    wanted: list[tuple[ShipSet, str, git.FileEntry]] = []
    for s in _sets(config, set_name):
        if s.command is not None:
            with tempfile.TemporaryDirectory(prefix="plimsoll-tree-") as tmp:
                git.checkout(repo, entries, Path(tmp))
                tree_dir = Path(tmp) / prefix if prefix else Path(tmp)
                tree_dir.mkdir(parents=True, exist_ok=True)
                for path, data in build_command_set(s, tree_dir, env=_builder_env(config),
                                                    where=f" at {what}"):
                    files.append(ShippedFile(s.name, path, data))
            continue
        # submodules are not part of this repository's content
        by_path = {e.path: e for e in entries if e.mode != "160000"}
        for path, rel in select_repo_paths(by_path, s, prefix):
            wanted.append((s, rel, by_path[path]))
    blobs = git.read_blobs(repo, [e.oid for _, _, e in wanted]) if read else {}
    for s, rel, e in wanted:
        files.append(ShippedFile(s.name, rel, blobs.get(e.oid, b""), source=e.path, blob=e.oid))
    files.sort(key=lambda f: (list(config.ship).index(f.set_name), f.path))
    return files


def from_index(repo_root: Path, config: Config, set_name: str | None = None,
               read: bool = True) -> list[ShippedFile]:
    """What each ship set ships from the staged content (the git index), never the working tree.

    With `read=False` glob-set files carry empty data and their blob id (the hook reads only the
    blobs it has not already judged clean).
    """
    repo = Path(repo_root).resolve()
    return _from_entries(repo, git.index_entries(repo), config, set_name, "the index", read)


def from_rev(repo_root: Path, rev: str, config: Config, set_name: str | None = None,
             read: bool = True) -> list[ShippedFile]:
    """What each ship set ships from the tree of commit `rev`."""
    repo = Path(repo_root).resolve()
    commit = git.resolve_rev(repo, rev)
    return _from_entries(repo, git.rev_entries(repo, commit), config, set_name,
                         f"commit {commit[:12]}", read)


def _builder_env(config: Config | None) -> dict[str, str]:
    env = dict(os.environ)
    # The builder is harness code working in a throwaway checkout: no git hook state that points
    # it at the user's repository, and no HMAC key it could copy into what ships.
    for var in ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE", "GIT_PREFIX",
                "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        env.pop(var, None)
    if config is not None and config.key_env:
        env.pop(config.key_env, None)
    return env


def build_command_set(ship_set: ShipSet, tree_dir: Path, env: dict[str, str] | None = None,
                      where: str = "") -> list[tuple[str, bytes]]:
    """Run a command set's builder with cwd `tree_dir`; return what it wrote into `{out}`.

    `tree_dir` is the config's folder inside a checkout. The output is filtered by the set's
    include/exclude when given. A non-zero exit or a timeout raises `BuilderFailed`.
    """
    if ship_set.command is None:
        raise ValueError(f"ship set {ship_set.name} has no command")
    with tempfile.TemporaryDirectory(prefix=f"plimsoll-ship-{ship_set.name}-") as out:
        outp = Path(out) / "out"
        outp.mkdir()
        if isinstance(ship_set.command, str):
            argv: list[str] | str = ship_set.command.replace("{out}", shlex.quote(str(outp)))
            shell = True
        else:
            argv = [a.replace("{out}", str(outp)) for a in ship_set.command]
            shell = False
            if not shutil.which(argv[0], path=(env or os.environ).get("PATH")) \
                    and not (Path(tree_dir) / argv[0]).exists():
                raise BuilderFailed(ship_set.name, 127, f"{argv[0]}: command not found", where)
        run_env = dict(env if env is not None else _builder_env(None))
        run_env["PLIMSOLL_OUT"] = str(outp)
        run_env["PLIMSOLL_SHIP_SET"] = ship_set.name
        try:
            proc = subprocess.run(argv, shell=shell, cwd=str(tree_dir), env=run_env,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=ship_set.timeout)
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode("utf-8", "replace") + \
                (e.stderr or b"").decode("utf-8", "replace")
            raise BuilderFailed(ship_set.name, 124, text + f"\n(timed out after "
                                f"{ship_set.timeout:g} s; raise ship.{ship_set.name}.timeout)",
                                where) from None
        if proc.returncode != 0:
            text = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
            code = proc.returncode if proc.returncode > 0 else 128 - proc.returncode
            raise BuilderFailed(ship_set.name, code, text, where)
        walked = _walk(outp)
        paths = {rel: p for rel, p in walked}
        keep = select(paths, ship_set) if (ship_set.include or ship_set.exclude) else list(paths)
        return [(rel, _read(paths[rel])) for rel in keep]


# --------------------------------------------------------------------------- one call


def config_at(repo: Path, config_path: Path, rev: str | None) -> Config:
    """The config as committed at `rev` (`":"` = the index), read from git; the working-tree file
    when that version does not have it. Relative paths still resolve in the working tree.
    """
    repo = Path(repo).resolve()
    config_path = Path(config_path).resolve()
    try:
        rel = config_path.relative_to(repo).as_posix()
    except ValueError:
        return load_config(config_path)  # an external config: the same for every version
    spec = f":{rel}" if rev == ":" else f"{git.resolve_rev(repo, rev)}:{rel}" if rev else None
    if spec is None:
        return load_config(config_path)
    data = git.show_blob(repo, spec)
    if data is None:
        return load_config(config_path)
    where = "staged" if rev == ":" else f"at {rev}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{rel} ({where}): not UTF-8 text; save the config as UTF-8") from None
    cfg = parse_config(text, f"{rel} ({where})", config_path.parent)
    return cfg._replace(path=config_path)


def collect(config_path: str | None, set_name: str | None, staged: bool, rev: str | None,
            cwd: Path) -> tuple[Config, list[ShippedFile]]:
    """Load the config and return what ships from the working tree, the index (`staged`) or
    commit `rev`.

    Without `config_path`, `plimsoll.yaml` at the repository root is used, in the version that is
    staged (`staged`) or committed at `rev` when that version has one, so a commit is judged by
    its own ship sets; an explicit `config_path` is used as it is on disk for every source (an
    auditor's external config).
    """
    if staged and rev:
        raise BadInput("--staged and --rev are exclusive; pick the index or one commit")
    cwd = Path(cwd).resolve()
    if config_path is None:
        found = find_config(cwd)
        if found is None:
            raise BadInput(f"{cwd}: no {CONFIG_NAME} at the repository root; create one "
                           "or pass --config FILE")
        if staged or rev:
            repo = git.repo_root(cwd)
            config = config_at(repo, found, ":" if staged else rev)
        else:
            config = load_config(found)
    else:
        p = Path(config_path)
        config = load_config(p if p.is_absolute() else cwd / p)
    if not (staged or rev):
        return config, from_worktree(None, config, set_name)
    repo = git.repo_root(config.base if git.toplevel(config.base) else cwd)
    if staged:
        return config, from_index(repo, config, set_name)
    return config, from_rev(repo, rev, config, set_name)
