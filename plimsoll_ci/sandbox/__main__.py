"""`python3 -m plimsoll_ci.sandbox smoke [NAME ...]`: start one sandbox per provider, print its tier."""

from __future__ import annotations

import sys
import tempfile

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import all_providers, stage, startup

CODE = "class Controller:\n    def __init__(self, info):\n        pass\n"


def smoke(wanted: list[str]) -> int:
    """Start one sandbox per provider that is available here (all of them by default); print the
    tier each earned. Fails when a named provider, or gVisor, cannot start."""
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/controller.py"
        with open(path, "w") as fh:
            fh.write(CODE)
        for name in wanted or list(all_providers.PROVIDERS):
            ok, why = all_providers.get(name).available()
            if not ok:
                print(f"smoke: {name}: not available: {why}")
                failed += name in wanted or name == "gvisor"
                continue
            st = stage.stage(path)
            try:
                opened = startup.open_sandbox(name, st, startup.Startup({}, 1))
                if isinstance(opened, startup.StartupFailure):
                    print(f"smoke: {name}: FAILED: {opened.reason}: {opened.detail}")
                    failed += 1
                    continue
                opened.session.close()
                passed = [c["name"] for c in opened.evidence["checks"] if c["passed"]]
                print(f"smoke: {name}: tier {opened.tier} (configured "
                      f"{opened.configured_tier}); start {opened.startup_wall:.2f} s; "
                      f"checks passed: {', '.join(passed) or 'none'}")
            except SandboxError as e:
                print(f"smoke: {name}: FAILED: {e}")
                failed += 1
            finally:
                stage.cleanup(st)
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "smoke":
        print(f"usage: python3 -m plimsoll_ci.sandbox smoke [{'|'.join(all_providers.PROVIDERS)} ...]",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(smoke(args[1:]))
