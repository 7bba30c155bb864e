"""`python3 -m plimsoll_ci.sandbox smoke`: start one sandbox per available provider and print its tier."""

from __future__ import annotations

import sys

from plimsoll_ci.sandbox import smoke

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "smoke":
        print("usage: python3 -m plimsoll_ci.sandbox smoke [gvisor|docker|process ...]",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(smoke(args[1:]))
