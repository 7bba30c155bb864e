"""What a harness ships: `plimsoll.yaml` -> named ship sets -> the (path, bytes) that enter a sandbox.

Public API (used by `plimsoll-ci scan --config`, `ship list`, the hook, the action and `history`):

Config (parsed in `plimsoll_ci.shipscan.shipconfig`, re-exported here)
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
    `ShipSet(name, include, exclude, command, inputs, root, timeout, line, allow_empty)`: globs
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
    root's `plimsoll.yaml` in the version being judged (staged, or at `rev`). A set that ships
    nothing is refused there (`check_not_empty`, exit 2) unless it says `allow_empty: true`.

`ShippedFile(set_name, path, data, source, blob)`: `path` is the path as shipped (relative to the
ship root; names are scanned on this), `source` the repository path it came from (None for builder
output), `blob` the git object id when read from git (a cache key). `label(f)` is how a finding
shows the file: the repository path for a glob set, `SET:path` for builder output.

Paths in the config are relative to the config file's folder unless absolute. When the config lies
outside the repository (an auditor's external config), ship globs apply from the repository root.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci import git
from plimsoll_ci.errors import BadInput, ConfigError, PlimsollError
from plimsoll_ci.files import cannot_read
from plimsoll_ci.shipscan.scan import Item
from plimsoll_ci.shipscan.shipconfig import CONFIG_NAME as CONFIG_NAME
from plimsoll_ci.shipscan.shipconfig import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from plimsoll_ci.shipscan.shipconfig import Config as Config
from plimsoll_ci.shipscan.shipconfig import ShipSet as ShipSet
from plimsoll_ci.shipscan.shipconfig import config_or_none as config_or_none
from plimsoll_ci.shipscan.shipconfig import config_text, glob_spec
from plimsoll_ci.shipscan.shipconfig import find_config as find_config
from plimsoll_ci.shipscan.shipconfig import load_config as load_config
from plimsoll_ci.shipscan.shipconfig import load_key as load_key
from plimsoll_ci.shipscan.shipconfig import load_withheld as load_withheld
from plimsoll_ci.shipscan.shipconfig import parse_config as parse_config
from plimsoll_ci.shipscan.shipconfig import withheld_for as withheld_for


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
               "fix the builder (its output follows)")
        super().__init__(msg, details=tail.splitlines())  # one escaped line each
        self.set_name = set_name
        self.output = output
        self.exit_code = code if 0 < code < 256 else 2


# --------------------------------------------------------------------------- globs


class _Matcher:
    """Compiled include/exclude lists; a path matches when it or one of its folders does."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.spec = glob_spec(patterns) if patterns else None

    def __call__(self, path: str) -> bool:
        return self.spec is not None and self.spec.match(path)


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
                 else f.data, f.path, f.blob, set_name=f.set_name) for f in files]


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
        raise BadInput(f"shipped file {p}: {cannot_read(e)}; fix its permissions") from None


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
    order = {name: i for i, name in enumerate(config.ship)}
    files.sort(key=lambda f: (order[f.set_name], f.path))
    return files


def from_index(repo_root: Path, config: Config, set_name: str | None = None,
               read: bool = True, entries: list[git.FileEntry] | None = None
               ) -> list[ShippedFile]:
    """What each ship set ships from the staged content (the git index), never the working tree.

    With `read=False` glob-set files carry empty data and their blob id (the hook reads only the
    blobs it has not already judged clean). `entries`: the index as `git.index_entries` listed
    it already (the hook lists it once).
    """
    repo = Path(repo_root).resolve()
    if entries is None:
        entries = git.index_entries(repo)
    return _from_entries(repo, entries, config, set_name, "the index", read)


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
    origin = f"{rel} ({'staged' if rev == ':' else f'at {rev}'})"
    cfg = parse_config(config_text(data, origin), origin, config_path.parent)
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
        files = from_worktree(None, config, set_name)
        check_not_empty(config, files, "the working tree", set_name)
        return config, files
    repo = git.repo_root(config.base if git.toplevel(config.base) else cwd)
    if staged:
        files = from_index(repo, config, set_name)
        check_not_empty(config, files, "the index", set_name)
        return config, files
    assert rev  # (neither the working tree nor the index: a commit was asked for)
    files = from_rev(repo, rev, config, set_name)
    check_not_empty(config, files, f"commit {rev}", set_name)
    return config, files


def check_not_empty(config: Config, files: Sequence[ShippedFile], where: str,
                    set_name: str | None = None) -> None:
    """Refuse (`BadInput`, exit 2) when a ship set (`set_name`, else every set) ships no file at
    `where`, unless the set says `allow_empty: true`: a scan of nothing never passes in silence
    (a misspelt glob such as `viewr/**` would make every scan clean)."""
    shipped = {f.set_name for f in files}
    names = [set_name] if set_name else list(config.ship)
    empty = [n for n in names if n not in shipped
             and not (n in config.ship and config.ship[n].allow_empty)]
    if empty:
        sets = ", ".join(empty)
        raise BadInput(f"{config.path}: ship set {sets} ships no files at {where}; fix its "
                       "include globs or builder, or add `allow_empty: true` to the set if it "
                       "may ship nothing (a scan never passes by scanning nothing)")
