"""The ship-scan front end: what ships, scanned against a withheld set, reported without a value.

Modules, each importing only the ones above it (and the layers below the package,
docs/architecture.md):

- `globs`: ship-set globs (gitignore's rules); `ondisk`: the folder walk and checked reads of
  `scan PATH`; `redact`: the one redactor (`Redactor`), over the result types of `results`.
- `results`: `ScanResult`, `Verdict`, `decide_mode`, `combine`, `shown_path`: what a scan gives.
- `scan`: the session (`ShipScan`, `Verdicts`, `scan_items`, `scan_paths`, `make_limits`).
- `shipconfig`: `plimsoll.yaml`; `ship`: what ships (`collect`); `configmemo`: the hook's memo
  of a parsed config.
- `sarif`, `report`: SARIF 2.1.0, text, JSON and Markdown, from a result alone; `baseline`:
  findings already dealt with.
- `hook`: the pre-commit hooks (the ship scan with the index cache, pre-push, withheld guard).

The names below are the package's public surface; each is imported from its module on first
use, so `plimsoll_ci.shipscan.globs` (the warm hook) loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plimsoll_ci.shipscan.redact import Redactor
    from plimsoll_ci.shipscan.report import render
    from plimsoll_ci.shipscan.results import ScanResult, Verdict, decide_mode
    from plimsoll_ci.shipscan.scan import Item, ShipScan, make_limits, scan_items, scan_paths
    from plimsoll_ci.shipscan.ship import collect
    from plimsoll_ci.shipscan.shipconfig import Config, find_config, load_withheld

_WHERE = {
    "Redactor": "redact", "render": "report", "ScanResult": "results", "Verdict": "results",
    "decide_mode": "results", "Item": "scan", "ShipScan": "scan", "make_limits": "scan",
    "scan_items": "scan", "scan_paths": "scan", "collect": "ship", "Config": "shipconfig",
    "find_config": "shipconfig", "load_withheld": "shipconfig",
}

__all__ = [
    "Config", "Item", "Redactor", "ScanResult", "ShipScan", "Verdict", "collect", "decide_mode",
    "find_config", "load_withheld", "make_limits", "render", "scan_items", "scan_paths",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'plimsoll_ci.shipscan' has no attribute {name!r}")
    return getattr(importlib.import_module(f"plimsoll_ci.shipscan.{_WHERE[name]}"), name)
