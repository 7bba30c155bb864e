"""`plimsoll.yaml`: its records (`Config`, `ShipSet`), its parser and the way to find and load it.

`parse_config(text, origin, base)` reads YAML with a loader that remembers the line of every key
and value, so a `ConfigError` (exit 2) names the file and line: `plimsoll.yaml line 7:
ship.viewer.include must be a list of globs`. `load_config(path)`, `find_config(start)` (the git
repository root's `plimsoll.yaml`, else `start` or a parent), `load_key(config)` and
`load_withheld(config, key=None)` build on it. It is two steps: `declare(text, origin)`, what
the text says (the same in every clone of it, so the hook remembers it by content), and
`anchor(declared, origin, base)`, its paths resolved in one folder. What ships under a config
(globs, sources, builders) is `plimsoll_ci.shipscan.ship`'s, which re-exports these names as its public
API.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci import git, withheld, yamlsafe
from plimsoll_ci.errors import BadInput, ConfigError, WithheldSetError
from plimsoll_ci.files import MiB, cannot_read, read_bounded
from plimsoll_ci.shipscan.globs import Globs

CONFIG_NAME = "plimsoll.yaml"
DEFAULT_TIMEOUT = 600.0
MAX_CONFIG_BYTES = 1 * MiB  # a config is a page; /dev/zero or a huge file is refused
_SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP_KEYS = ("withheld", "key", "ship", "mode", "limits")
_SET_KEYS = ("include", "exclude", "command", "inputs", "root", "timeout", "description",
             "allow_empty")


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
    allow_empty: bool = False  # a set that may ship nothing (else shipping nothing is exit 2)


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


# --------------------------------------------------------------------------- config


_Map = yamlsafe.LinedMap
_Seq = yamlsafe.LinedSeq


def _yaml_load(text: str, origin: str) -> Any:
    def check_key(key: Any, line: int, twice: bool) -> ConfigError | None:
        if twice:
            return ConfigError(f"{origin} line {line}: duplicate key {key!r}; keep one")
        if not isinstance(key, str | int | float | bool) and key is not None:
            return ConfigError(f"{origin} line {line}: keys must be plain names")
        return None

    # nesting and aliases bounded, with a line; every mapping and list keeps its lines
    return yamlsafe.load_lined(text, origin, check_key)


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
            glob_spec([v])
        except ValueError:
            raise ConfigError(f"{origin} line {where}: {what}: {v!r} is not a valid glob") from None
    return tuple(value)


def _relpath_ok(value: str) -> bool:
    parts = Path(value).parts
    return not Path(value).is_absolute() and ".." not in parts


class Declared(NamedTuple):
    """What a `plimsoll.yaml` text says, checked, before its paths are anchored to a folder
    (`anchor`): the same for every clone of the same text, so it can be remembered by content."""

    withheld: str | None  # as written, relative to the config's folder
    key_env: str | None
    key_file: str | None  # as written (`~` not yet expanded)
    key_line: int  # the line of `key.file`, for the message that refuses one inside the repo
    mode: str
    limits: dict[str, float]
    ship: dict[str, ShipSet]


def parse_config(text: str, origin: str, base: Path) -> Config:
    """Parse `plimsoll.yaml` text; `origin` names it in messages, `base` is its folder."""
    return anchor(declare(text, origin), origin, base)


def declare(text: str, origin: str) -> Declared:
    """What `plimsoll.yaml` text declares (YAML read and every rule checked, no file looked at);
    `ConfigError` names `origin` and the line."""
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
        withheld = w

    key_env = key_file = None
    key_line = 0
    if doc.get("key") is not None:
        k = doc["key"]
        line = _line_of(doc, "key")
        if not isinstance(k, _Map) or len(k) != 1 or next(iter(k)) not in ("env", "file"):
            raise ConfigError(f"{origin} line {line}: key must be {{env: VARIABLE}} or "
                              "{file: PATH} (a file outside the repository)")
        kind, value = next(iter(k.items()))
        key_line = _line_of(k, kind)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{origin} line {key_line}: key.{kind} must be a string")
        if kind == "env":
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
                raise ConfigError(f"{origin} line {key_line}: key.env must be an "
                                  "environment variable name, not the key itself")
            key_env = value
        else:
            key_file = value

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
    return Declared(withheld, key_env, key_file, key_line, mode, limits, ship)


def anchor(declared: Declared, origin: str, base: Path, repo: Path | None = None) -> Config:
    """The `Config` of `declared` for a config in folder `base`: its paths resolved there (links
    and `~` included), and a `key.file` inside the repository refused (`repo`: the repository's
    top when the caller knows it, else git is asked)."""
    base = Path(base).resolve()
    withheld = (base / declared.withheld).resolve() if declared.withheld is not None else None
    key_file = None
    if declared.key_file is not None:
        value = declared.key_file
        key_file = (base / os.path.expanduser(value)).resolve()
        top = repo.resolve() if repo is not None else git.toplevel(base)
        if top is not None and key_file.is_relative_to(top):
            raise ConfigError(f"{origin} line {declared.key_line}: key.file {value} is inside "
                              f"the repository {top}; keep the key outside it "
                              "(or use key: {env: VARIABLE})")
    return Config(Path(origin) if not isinstance(origin, Path) else origin, base, withheld,
                  declared.key_env, key_file, declared.mode, declared.limits, declared.ship)


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
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
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
    allow_empty = body.get("allow_empty", False)
    if not isinstance(allow_empty, bool):
        raise ConfigError(f"{origin} line {_line_of(body, 'allow_empty')}: {where}.allow_empty "
                          "must be true or false")
    return ShipSet(name, include, exclude, command, inputs, root, timeout, line, allow_empty)


def config_text(data: bytes, origin: str) -> str:
    """A config's bytes as text (a committed or staged version); `ConfigError` unless UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{origin}: not UTF-8 text; save the config as UTF-8") from None


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a `plimsoll.yaml`; `ConfigError` names the file and line."""
    p = Path(path)
    data = config_bytes(p)
    try:  # (as text: line ends as `\n`, as `read_text` gives them)
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: {cannot_read(e)}; a config is UTF-8 text") from None
    cfg = parse_config(text, str(p), p.resolve().parent)
    return cfg._replace(path=p.resolve())


def config_bytes(p: Path) -> bytes:
    """A config file's bytes (at most `MAX_CONFIG_BYTES`, a regular file); `ConfigError` when it
    is missing, cannot be read or is over the bound."""
    if not os.path.lexists(p):
        raise ConfigError(f"{p}: no such config file; create it or pass --config")
    try:
        return read_bounded(p, MAX_CONFIG_BYTES, f"{p}")
    except BadInput as e:
        raise ConfigError(f"{e} (the config)") from None


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
                             file=str(config.key_file) if config.key_file else None,
                             flags=(f"{config.path}: key.env", "`key: {file: PATH}` there"))


def load_withheld(config: Config, key: bytes | None = None) -> withheld.WithheldSet:
    """Load the config's withheld set (with `key`, or the configured key when `key` is None)."""
    if config.withheld is None:
        raise ConfigError(f"{config.path}: no `withheld:` path; add `withheld: withheld.json`")
    return withheld_for(config.withheld, key, config, config.base)


def withheld_for(path: str | os.PathLike[str] | None, key: bytes | None,
                 config: Config | Callable[[], Config | None] | None,
                 start: Path) -> withheld.WithheldSet:
    """The withheld set a command scans with: the file and key its flags name (`path`, `key`),
    else the config's. `config` is the config read (`--config`, or `find_config(start)`; None
    when there is none), or a function that reads it, called only when the flags leave the set
    or a keyed set's key unsaid. A keyed set with no key from either is refused naming the
    config that was read, or saying none was found from `start`."""
    read = config if callable(config) else (lambda: config)
    cfg: Config | None = None if callable(config) else config
    if cfg is not None and key is None:
        key = load_key(cfg)  # (a config read already: its key, said when the set is unkeyed)
    if path is None:
        cfg = read()
        if cfg is None:
            raise ConfigError(f"{Path(start).resolve()}: which withheld set? no {CONFIG_NAME} "
                              "at the repository root names one; give --withheld withheld.json "
                              f"(its file), or add `withheld: withheld.json` to a {CONFIG_NAME} "
                              "there")
        if cfg.withheld is None:
            raise ConfigError(f"{cfg.path}: no `withheld:` path; add `withheld: "
                              "withheld.json`, or give --withheld FILE")
        path = cfg.withheld
        key = key if key is not None else load_key(cfg)
    wset = withheld.load(path, key=key, need_key=False)
    if wset.keyed and wset.key is None and cfg is None:
        cfg = read()
        key = load_key(cfg) if cfg is not None else None
        if key is not None:
            wset = withheld.load(path, key=key)
    if wset.keyed and wset.key is None:
        where = f"{cfg.path} (read) names no key: add `key: {{env: VAR}}` or " \
            "`key: {file: PATH}` to it" if cfg is not None else \
            f"no {CONFIG_NAME} was found at the repository root of {Path(start).resolve()}"
        raise WithheldSetError(
            f"withheld set {path} is keyed (key id {wset.key_id}): give its key with --key-env "
            f"VAR or --key-file FILE; {where} (see docs/withheld-sets.md, making the key)")
    return wset


def config_or_none(config_path: str | None, start: Path) -> Config | None:
    """The config a command reads: `config_path` (relative to `start`) when given, else
    `find_config(start)` (the repository root's `plimsoll.yaml`, as the hook finds it), else
    None."""
    if config_path is not None:
        p = Path(config_path)
        return load_config(p if p.is_absolute() else Path(start) / p)
    found = find_config(start)
    return load_config(found) if found is not None else None


def glob_spec(patterns: Sequence[str]) -> Globs:
    """Compiled gitignore globs (`globs.Globs`: pathspec's translation, matched as its
    `GitIgnoreSpec` matches in pure Python); ValueError for one git would not take (a trailing
    `\\`)."""
    return Globs(patterns)
