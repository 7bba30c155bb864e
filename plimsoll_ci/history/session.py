"""What one replay or bisect shares: the repository, the withheld set, the limits, the config, the
cache and the notes; and the revisions it walks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.git import Repo, check_revs, is_shallow, open_repo
from plimsoll_ci.git import run as git
from plimsoll_ci.history import configs
from plimsoll_ci.history.cache import ScanCache, cache_key
from plimsoll_ci.history.records import Notes, Options
from plimsoll_ci.shipscan import ship
from plimsoll_ci.shipscan.scan import Limits, make_limits


class Session(NamedTuple):
    """The context of one replay or bisect, passed whole instead of one argument per part."""

    repo: Repo
    wset: Any
    limits: Limits
    external: ship.Config | None  # the --config file (auditor mode); None: each commit's own
    options: Options
    cache: ScanCache
    notes: Notes

    @property
    def max_blob_bytes(self) -> int:
        """How much of a blob is read and scanned: --max-blob-bytes, never over the file bound."""
        return min(self.options.max_blob_bytes, getattr(self.limits, "max_file_bytes", 1 << 62))


def open_session(repo: str | Repo, wset: Any, options: Options, notes: Notes) -> Session:
    """Open the repository (a folder: see `open_repository`; or one opened already), load the
    external config and its limits, and open the cache; notes go to `notes`.
    """
    if not isinstance(repo, Repo):
        repo = open_repository(repo, options, notes)
    external, limits = _config(options, configs.user_memos(
        repo.git_dir if options.use_cache else None))
    cache = ScanCache(os.path.join(repo.git_dir, "plimsoll-cache") if options.use_cache else None,
                      cache_key(wset, limits, options.max_blob_bytes))
    return Session(repo, wset, limits, external, options, cache, notes)


def open_repository(repo_dir: str, options: Options, notes: Notes) -> Repo:
    """The repository containing `repo_dir` (refusing a shallow clone unless `shallow_ok`), its
    revisions checked; notes go to `notes`.
    """
    repo = open_repo(repo_dir)
    if is_shallow(repo):
        if not options.shallow_ok:
            raise BadInput(f"{repo.top}: a shallow clone; commits before its shallow boundary are "
                           "missing, so a leak may be older than any report could say. Run "
                           "`git fetch --unshallow`, or pass --shallow-ok to replay what is here")
        notes.add("shallow clone: history stops at the shallow boundary; an entry that ships "
                  "at a boundary commit may have shipped earlier (`git fetch --unshallow` to know)")
    check_revs(options.revs)
    return repo


def _config(options: Options, memo: Path | None) -> tuple[Any, Limits]:
    external = None
    if options.config is not None:
        external = configs.external(options.config, memo)
    limits = Limits()
    if external is not None and external.limits:  # read as the scan reads them (one road)
        limits = make_limits(external.limits, str(external.path))
    return external, limits


def rev_args(repo: Repo, options: Options) -> list[str]:
    """The revisions to walk, as git takes them: the range given, every ref (`--all`) or HEAD."""
    if options.all_refs:
        if options.revs:
            raise BadInput("--all and a revision range are exclusive; give one or the other")
        # every branch (remote-tracking ones too: an auditor's fresh clone has few local ones) and
        # tag; not refs/notes or refs/stash, whose trees are not something a harness shipped
        refs = ["--branches", "--tags", "--remotes"]
        if git(repo.top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0:
            refs.append("HEAD")
        return refs
    if options.revs:
        return list(options.revs)
    if git(repo.top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise BadInput(f"{repo.top}: no commits yet (HEAD names none); commit first or give a range")
    return ["HEAD"]


def tips(repo: Repo, revs: list[str]) -> set[str]:
    """The commits `revs` name as ends (branch and tag heads, HEAD, the `B` of `A..B`): a commit
    anyone can still check out, so an entry it ships has not stopped shipping.
    """
    # `revs` are ref options of ours or revisions that `check_revs` let through (none reads as
    # an option); negative ones (`^A`, the `A` of `A..B`) are dropped.
    named = [r for r in git(repo.top, "rev-parse", "--revs-only", *revs).stdout.decode().split()
             if not r.startswith("^")]
    out: set[str] = set()
    for i in range(0, len(named), 1000):  # (thousands of tags stay under the argument limit)
        chunk = named[i:i + 1000]
        peeled = git(repo.top, "rev-parse", *(f"{r}^{{commit}}" for r in chunk), check=False)
        if peeled.returncode == 0:
            out.update(peeled.stdout.decode().split())
            continue
        for r in chunk:  # a tag of a tree or a blob names no commit: peel one by one, skip those
            one = git(repo.top, "rev-parse", "--verify", "--quiet", f"{r}^{{commit}}", check=False)
            if one.returncode == 0:
                out.add(one.stdout.decode().strip())
    return out
