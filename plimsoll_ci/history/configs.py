"""The configs a replay reads, remembered by content as the hook remembers its staged config
(`configmemo`): the auditor's `--config FILE` and each commit's own `plimsoll.yaml`.

Parsing a config imports PyYAML and pathspec (about 60 ms of CPU, a tenth of a warm replay of
psf/requests). What a config's text declares (`shipconfig.declare`) depends only on its bytes
and on the parser's code, so it is kept under the git blob id of those bytes with the
translations of its globs, in configmemo's memos: a repeat run reads the memo and imports
neither library. The paths are anchored again on every run (`shipconfig.anchor`), exactly as
`ship.load_config` and `ship.parse_config` anchor them.

Where: `--config FILE`, the same in every repository an auditor replays, in the user's cache
(`configmemo.memo_dir`, else this repository's); a commit's own config in this repository's
`.git/plimsoll/history-configs/` (a long history of config versions stays out of the hook's
memos, which configmemo keeps to the newest 32). Nothing is read or written with `--no-cache`. A memo is trusted only as configmemo
trusts one (this user's alone, its digest line right, the same blob and parser); a parse error
is never remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from plimsoll_ci.errors import ConfigError
from plimsoll_ci.files import cannot_read
from plimsoll_ci.git import blob_id
from plimsoll_ci.shipscan import configmemo, shipconfig

MEMO_FOLDER = ("plimsoll", "history-configs")  # under the git folder, beside the hook's memos

# (blob id, memo folder) -> what it declares, in this process
_DECLARED: dict[tuple[str, Path | None], shipconfig.Declared] = {}


def declared(oid: str, text: Callable[[], str], origin: str,
             folder: Path | None) -> shipconfig.Declared:
    """What the config whose git blob id is `oid` declares: remembered in this process, else
    from a trusted memo in `folder`, else `shipconfig.declare(text(), origin)` (remembered in
    `folder` when given). `text` is called only when the config must be parsed; its errors, and
    `ConfigError` naming `origin` and the line, reach the caller.
    """
    found = _DECLARED.get((oid, folder))
    if found is None:
        found = shipconfig.declare(text(), origin) if folder is None else \
            configmemo.remembered(oid, folder, origin, text)
        _DECLARED[(oid, folder)] = found
    return found


def external(path: str, folder: Path | None) -> shipconfig.Config:
    """`ship.load_config(path)` (the same `Config`, the same errors), its declaration remembered
    (`declared`) unless the file holds a carriage return: `load_config` reads it as text, which
    turns line ends into `\\n`, and a memo is keyed by the bytes as they are.
    """
    p = Path(path)
    data = shipconfig.config_bytes(p)
    if b"\r" in data:
        return shipconfig.load_config(p)

    def text() -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{p}: {cannot_read(e)}; a config is UTF-8 text") from None

    decl = declared(blob_id(data), text, str(p), folder)
    cfg = shipconfig.anchor(decl, str(p), p.resolve().parent)
    return cfg._replace(path=p.resolve())


def repo_memos(git_dir: str | None) -> Path | None:
    """Where a commit's own configs are remembered: this repository's git folder (not the
    history cache's folder, whose files are the blob caches alone); None when caching is off
    (`git_dir` None)."""
    return Path(git_dir, *MEMO_FOLDER) if git_dir is not None else None


def user_memos(git_dir: str | None) -> Path | None:
    """Where `--config FILE` is remembered: the user's cache (`configmemo.memo_dir`), else this
    repository's (`repo_memos`); None when caching is off (`git_dir` None)."""
    return configmemo.memo_dir(repo_memos(git_dir)) if git_dir is not None else None
