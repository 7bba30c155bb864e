"""Moved to `plimsoll_ci.git`; these names stay importable from here until every caller moves."""

from __future__ import annotations

from plimsoll_ci.git import (  # noqa: F401
    MIN_GIT,
    MODE_SUBMODULE,
    MODE_SYMLINK,
    ZERO_OID,
    Blob,
    CatFile,
    Change,
    Commit,
    Repo,
    TreeEntry,
    blob_id,
    check_revs,
    git_version,
    is_shallow,
    ls_tree,
    open_repo,
    path_text,
    rev_list,
    walk,
)
from plimsoll_ci.git import run as git  # noqa: F401
