from __future__ import annotations

from plimsoll_ci.cli import program

raise SystemExit(program())
