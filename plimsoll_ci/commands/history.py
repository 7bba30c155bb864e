"""`plimsoll-ci history`: replay git history; first leak, fix and windows per withheld entry."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where they are used: a command's import is kept light)
    from plimsoll_ci.history import HistoryReport
    from plimsoll_ci.shipscan.baseline import Baseline
    from plimsoll_ci.withheld import WithheldSet

# Every process and file a replay opens is closed when `run` returns: the program may end there.
QUICK_EXIT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`history [--withheld withheld.json] [--config F] [REV-RANGE... | --all] [--format ...]
    [--bisect E]`; the set and its key default to plimsoll.yaml's."""
    from plimsoll_ci.commands._common import add_deprecated
    from plimsoll_ci.commands.baseline import add_baseline_argument

    parser.add_argument("revs", nargs="*", metavar="REV-RANGE",
                        help="commits to replay, as git takes them (main, A..B); default HEAD")
    parser.add_argument("--all", dest="all_refs", action="store_true",
                        help="every branch and tag")
    parser.add_argument("--withheld", dest="set_path", metavar="FILE",
                        help="the withheld set (JSON) to look for (default: the `withheld:` of "
                             "--config, else of plimsoll.yaml at the repository root)")
    add_deprecated(parser, "--set", "--withheld", "set_path")
    parser.add_argument("--config", metavar="FILE",
                        help="judge every commit by this plimsoll.yaml (auditor mode); "
                             "default: each commit's own plimsoll.yaml")
    parser.add_argument("--key-env", metavar="VAR", help="HMAC key of a keyed set, from $VAR "
                        "(default: the config's `key:`)")
    parser.add_argument("--key-file", metavar="FILE", help="HMAC key of a keyed set, from FILE "
                        "(default: the config's `key:`)")
    parser.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report here (default "
                        "stdout)")
    parser.add_argument("--bisect", metavar="ENTRY",
                        help="find the first commit shipping ENTRY in O(log n) scans along first "
                             "parents (assumes it kept shipping once introduced)")
    parser.add_argument("--shallow-ok", action="store_true",
                        help="replay a shallow clone anyway (the report notes the boundary)")
    parser.add_argument("--repo", default=".", metavar="DIR", help="the repository (default .)")
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="scanning processes (default: one per core this process may use)")
    parser.add_argument("--max-blob-bytes", type=int, default=64 << 20, metavar="N",
                        help="scan at most the first N bytes of a blob (noted when hit)")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write .git/plimsoll-cache/ (nor the configs "
                             "remembered by content)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_baseline_argument(parser)
    parser.add_argument("--every-commit", action="store_true",
                        help="also list every commit that ships an entry, with its findings "
                             "(JSON, one list per entry and per window; default: ranges)")


def run(args: argparse.Namespace) -> int:
    """Replay (or bisect); exit 0 when nothing withheld shipped, 1 when something did, 2 bad input."""
    import os
    import sys

    from plimsoll_ci import history, withheld
    from plimsoll_ci.commands._common import warn_set_notes
    from plimsoll_ci.errors import BadInput

    if args.jobs < 0:
        raise BadInput("--jobs must be 0 (one per core) or more")
    if args.max_blob_bytes <= 0:
        raise BadInput("--max-blob-bytes must be a positive number of bytes")
    if args.bisect and args.all_refs:
        raise BadInput("--bisect needs one line of history; give a branch or range, not --all")
    if args.bisect and args.baseline:
        raise BadInput("--baseline applies to the replay, not to --bisect (which looks for the "
                       "one entry it is given)")
    known = _baseline(args.baseline)
    key = withheld.key_from(env=args.key_env, file=args.key_file)
    if args.set_path is not None and key is not None:
        wset = withheld.load(args.set_path, key=key)
    else:
        # The set and the key come from plimsoll.yaml unless flags say otherwise: the auditor's
        # --config, else the repository root's (found as the hook finds it), read only if needed.
        from pathlib import Path

        from plimsoll_ci.history import configs
        from plimsoll_ci.shipscan import configmemo, ship

        def config() -> ship.Config | None:
            if args.config:
                memo = None if args.no_cache else configmemo.memo_dir(None)  # (the session's)
                return configs.external(args.config, memo)
            return ship.config_or_none(None, Path(args.repo))

        wset = ship.withheld_for(args.set_path, key, config, Path(args.repo))
    warn_set_notes(wset)
    options = history.Options(
        revs=tuple(args.revs), all_refs=args.all_refs,
        config=os.path.abspath(args.config) if args.config else None,
        shallow_ok=args.shallow_ok, jobs=args.jobs, max_blob_bytes=args.max_blob_bytes,
        use_cache=not args.no_cache, progress=False if args.no_progress else None,
        every_commit=args.every_commit)
    if args.bisect:
        result = history.bisect(args.repo, wset, args.bisect, options)
        text = history.render_bisect(result, "json" if args.format == "json" else "text")
        found = result.first is not None
    else:
        report = _baselined(history.replay(args.repo, wset, options), known, wset)
        text = history.render(report, args.format)
        found = bool(report.entries)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise BadInput(f"{args.output}: cannot write the report ({e.strerror})") from None
    else:
        sys.stdout.write(text)
    return 1 if found else 0


def _baseline(path: str | None) -> Baseline | None:
    """The `--baseline` file, read before the replay (a bad one: exit 2 naming its line)."""
    from plimsoll_ci.shipscan import baseline

    return baseline.load(path) if path else None


def _baselined(report: HistoryReport, known: Baseline | None,
               wset: WithheldSet) -> HistoryReport:
    """The replay's report without the entries the baseline matches (`baseline.apply_history`)."""
    from plimsoll_ci.shipscan import baseline

    return baseline.apply_history(report, known, wset)
