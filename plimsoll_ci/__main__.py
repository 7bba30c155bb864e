from __future__ import annotations

from plimsoll_ci.cli import main

raise SystemExit(main())
