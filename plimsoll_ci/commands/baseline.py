"""`plimsoll-ci baseline REPORT.json --reason TEXT -o FILE`: a baseline of the findings of a JSON
report of `scan` or `history`, by entry id and digest (never a value), each with a reason and
the date; and `--baseline FILE`, the flag of the commands that read one (docs/baseline.md)."""

from __future__ import annotations

import argparse
import sys

REPORT_BYTES = 256 * 1024 * 1024  # a JSON report lists at most max_findings per shipped file


def add_baseline_argument(parser: argparse.ArgumentParser) -> None:
    """`--baseline FILE`: findings already dealt with, for `scan`, `history` and the hook."""
    parser.add_argument("--baseline", metavar="FILE",
                        help="findings already dealt with (written by `plimsoll-ci baseline`): "
                             "reported as baselined and not counted; a stale entry is noted "
                             "(docs/baseline.md)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """REPORT, `--reason`, `-o`, the withheld set (`--withheld` or the config's), `--paths`."""
    parser.add_argument("report", metavar="REPORT",
                        help="a JSON report of `plimsoll-ci scan` or `history` (--format json)")
    parser.add_argument("--reason", required=True, metavar="TEXT",
                        help="why these findings are dealt with (rotated on DATE, accepted "
                             "window, ...); written beside each entry. Never put a value here")
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="the baseline file; when it exists its entries are kept and the "
                             "new ones added")
    parser.add_argument("--withheld", metavar="FILE",
                        help="the withheld set the report was made with (default: the one of "
                             "--config, or of plimsoll.yaml here); its digests name the entries")
    parser.add_argument("--config", metavar="FILE", help="plimsoll.yaml (default: ./plimsoll.yaml)")
    parser.add_argument("--paths", action="store_true",
                        help="baseline each finding in its own file only (default: the entry "
                             "wherever it ships)")


def run(args: argparse.Namespace) -> int:
    """Write the baseline; 0 written, 2 bad input (nothing written)."""
    import json
    import os

    from plimsoll_ci.commands._common import write_output
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.files import read_bounded
    from plimsoll_ci.names import shown
    from plimsoll_ci.shipscan import baseline
    from plimsoll_ci.withheld import load

    reason = " ".join(args.reason.split())
    if not reason:
        raise BadInput("--reason: say why these findings are dealt with (rotated on DATE, "
                       "accepted window, ...)")
    raw = read_bounded(args.report, REPORT_BYTES, f"report {args.report}")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:
        line = f" line {e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        raise BadInput(f"report {args.report}{line}: not JSON; give the report of `scan` or "
                       "`history` written with --format json") from None
    wanted = baseline.from_report(doc, args.report, args.paths)
    set_file = args.withheld or _configured_set(args.config)
    wset = load(set_file, need_key=False)  # ids and digests need no key
    old = baseline.load(args.output) if os.path.exists(args.output) else None
    entries, skipped = baseline.build(wanted, wset, reason, old)
    for s in skipped:
        print(f"plimsoll-ci: warning: {shown(s)}", file=sys.stderr)
    write_output(baseline.dumps(entries), args.output)
    added = len(entries) - (len(old.entries) if old else 0)
    print(f"plimsoll-ci: {added} entr{'y' if added == 1 else 'ies'} added, {len(entries)} in "
          f"{shown(args.output)}", file=sys.stderr)
    return 0


def _configured_set(config: str | None) -> str:
    from pathlib import Path

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.shipscan import ship

    path = Path(config) if config else Path.cwd() / ship.CONFIG_NAME
    if not config and not path.is_file():
        raise BadInput("which withheld set? give --withheld withheld.json, or --config "
                       "plimsoll.yaml")
    cfg = ship.load_config(path)
    if cfg.withheld is None:
        raise BadInput(f"{path}: names no withheld set; give --withheld withheld.json")
    return str(cfg.withheld)
