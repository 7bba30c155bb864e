"""The flags every command that grades shares (`grade`, `squeeze run`), defined once.

- `add_sandbox_arguments`: `--provider` (from `sandbox.all_providers.PROVIDERS`) and `--min-tier`
  (from `plimsoll_ci.tiers.TIERS`);
- `add_withheld_arguments`: `--withheld SET` (repeatable) and its HMAC key
  (`--withheld-key-env` / `--withheld-key-file`);
- `add_limit_arguments`: the CPU budget (`--cpu-per-tick`, `--cpu-per-flight`, `--cpu-startup`,
  `--wall-per-tick`) and `--memory-mb`, read back by `budget(args)` and `limits(args)`;
- `add_signing_key_arguments`: `--signing-key-file` / `--signing-key-env`, into the caller's
  (mutually exclusive) group.

Imports nothing at parse time: the provider and tier names are read from their tables when
argparse first needs them (`LazyChoices`), so a command that starts no sandbox loads none.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

_BUDGET = (("cpu_per_tick", "per_tick_s"), ("cpu_per_flight", "per_flight_s"),
           ("cpu_startup", "startup_s"), ("wall_per_tick", "wall_tick_s"))


class LazyChoices:
    """Choices read from a table (`MODULE.NAME`, a module path in full) when argparse first
    needs them."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def _names(self) -> list[str]:
        import importlib

        return list(getattr(importlib.import_module(self.module),
                            self.name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, value: object) -> bool:
        return value in self._names()


PROVIDER_CHOICES = LazyChoices("plimsoll_ci.sandbox.all_providers", "PROVIDERS")
TIER_CHOICES = LazyChoices("plimsoll_ci.tiers", "TIERS")


def add_sandbox_arguments(parser: argparse.ArgumentParser | Any, listed: bool = False) -> None:
    """`--provider` (default gvisor, never a fallback) and `--min-tier`. `listed`: the usage
    lists the choices (`{gvisor,docker,process}`), which reads the tables now; else they are
    named `PROVIDER` and `TIER` and read when a value is checked."""
    providers, tiers = (list(PROVIDER_CHOICES), list(TIER_CHOICES)) if listed \
        else (PROVIDER_CHOICES, TIER_CHOICES)
    parser.add_argument("--provider", choices=providers, default="gvisor",
                        metavar=None if listed else "PROVIDER",
                        help="sandbox provider: gvisor (default), docker (runtime runsc) or "
                             "process; never falls back to another")
    parser.add_argument("--min-tier", choices=tiers, metavar=None if listed else "TIER",
                        help="refuse to grade below this tier (configured and seen at "
                             "start-up): process, container, kernel or vm")


def add_withheld_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """`--withheld SET` (repeatable) and the HMAC key of those sets."""
    parser.add_argument("--withheld", action="append", default=[], metavar="SET",
                        help="a withheld set whose entries must not be in a controller (a "
                             "controller that carries one is refused: nothing flies); repeatable")
    parser.add_argument("--withheld-key-env", metavar="VAR",
                        help="environment variable holding the --withheld set's HMAC key")
    parser.add_argument("--withheld-key-file", metavar="FILE",
                        help="file holding the --withheld set's HMAC key")


def add_limit_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """The CPU budget (a group of its own) and `--memory-mb`, each refused out of its range."""
    from plimsoll_ci.commands._common import seconds, whole

    group = parser.add_argument_group("CPU budget (CPU seconds; wall clock only as outer bound)")
    group.add_argument("--cpu-per-tick", type=seconds(60), metavar="S",
                       help="CPU per flight per 10 ms tick (default 0.05; at most 60)")
    group.add_argument("--cpu-per-flight", type=seconds(3600), metavar="S",
                       help="CPU per flight in total (default 30; at most 3600)")
    group.add_argument("--cpu-startup", type=seconds(3600), metavar="S",
                       help="CPU for start-up: sandbox, import, constructors (default 20; at "
                            "most 3600)")
    group.add_argument("--wall-per-tick", type=seconds(3600), metavar="S",
                       help="outer wall-clock bound per tick, for a hang (default 10; at most "
                            "3600)")
    parser.add_argument("--memory-mb", type=whole(64, 65536), metavar="MB",
                        help="sandbox memory limit (default 1024; 64 to 65536)")


def add_signing_key_arguments(group: Any) -> None:
    """`--signing-key-file` and `--signing-key-env` (a kept Ed25519 key), into `group`."""
    group.add_argument("--signing-key-file", metavar="FILE",
                       help="a kept private signing key file (PKCS#8 PEM, mode 0600)")
    group.add_argument("--signing-key-env", metavar="VAR",
                       help="environment variable holding a kept private key's PEM text")


def budget(args: argparse.Namespace) -> Any:
    """The `grading.lockstep.CpuBudget` the budget flags ask for (BadInput for one not > 0)."""
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading.lockstep import CpuBudget

    changes = {}
    for flag, field in _BUDGET:
        value = getattr(args, flag)
        if value is not None:
            if not value > 0:
                raise BadInput(f"--{flag.replace('_', '-')} must be positive, not {value}")
            changes[field] = value
    return CpuBudget()._replace(**changes)


def limits(args: argparse.Namespace) -> Any:
    """The sandbox `Limits` `--memory-mb` asks for (BadInput under 64 MB)."""
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.sandbox.session import Limits

    if args.memory_mb is None:
        return Limits()
    if args.memory_mb < 64:
        raise BadInput(f"--memory-mb {args.memory_mb}: at least 64 (numpy needs it)")
    return Limits(memory_bytes=args.memory_mb * 1024 * 1024)
