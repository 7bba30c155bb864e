"""Tiers: what a sandbox was configured as, checked against what was seen inside it.

A tier is never a claim of hardware attestation. It is the provider's configured strength, kept
only when every start-up check that tier needs was seen passing from inside the sandbox before the
controller was imported; otherwise the run is recorded one tier lower, and `--min-tier` refuses it.

A neutral module below `sandbox/` (which judges a sandbox's checks) and `attest/` (which checks a
record's tier against the one list): it imports nothing of the project but `errors`.
"""

from __future__ import annotations

from typing import NamedTuple

from plimsoll_ci.errors import BadInput, SandboxError

TIERS = ("process", "container", "kernel", "vm")  # weakest first; the one list of tiers
# Without the runner's hello no start-up check was seen: nothing above the weakest tier is earned.
UNCHECKED = TIERS[0]


class Check(NamedTuple):
    """One start-up check: its name, whether it passed, and what was seen."""

    name: str
    passed: bool
    seen: str


def rank(tier: str) -> int:
    """Position of a tier, weakest first; BadInput for an unknown name."""
    try:
        return TIERS.index(tier)
    except ValueError:
        raise BadInput(f"tier {tier!r}: unknown; use one of {', '.join(TIERS)}") from None


def weakest(seen: list[str]) -> str:
    """The weakest of the tiers in `seen` (what a grading over several sandboxes earned)."""
    return min(seen, key=rank)


def checks(probes: dict) -> list[Check]:
    """Judge the runner's start-up probes (seen before any controller code ran)."""
    interfaces = probes.get("interfaces") or []
    writes = probes.get("writes") or {}
    banner = str(probes.get("kernel_log_head", ""))
    return [
        Check("gvisor_kernel", bool(probes.get("gvisor_banner")),
              banner.splitlines()[0][:120] if banner else "no kernel log"),
        Check("network_loopback_only", list(interfaces) in ([], ["lo"]),
              ", ".join(map(str, interfaces)) or "no interfaces"),
        Check("root_readonly", probes.get("root_readonly") is True
              and probes.get("code_readonly") is True
              and all(v != "writable" for v in writes.values()),
              ("read-only root and code" if probes.get("root_readonly")
               and probes.get("code_readonly") else "writable root or code")
              + "; " + ", ".join(f"{k}: {v}" for k, v in sorted(writes.items()))),
        Check("host_canary_unreadable", str(probes.get("canary", "")).startswith("unreadable"),
              str(probes.get("canary", "not probed"))),
    ]


# The checks each tier needs to be kept; a failed one drops the run below that tier.
_NEEDS = {
    "kernel": ("gvisor_kernel", "network_loopback_only", "root_readonly", "host_canary_unreadable"),
    "container": ("network_loopback_only", "root_readonly", "host_canary_unreadable"),
    "process": (),
}


def effective(configured: str, seen: list[Check]) -> tuple[str, list[str]]:
    """The tier a run earned: `configured`, or lower when a check it needs did not pass."""
    passed = {c.name for c in seen if c.passed}
    notes = []
    tier = configured
    while tier != "process":
        missing = [n for n in _NEEDS.get(tier, ()) if n not in passed]
        if not missing:
            break
        lower = TIERS[rank(tier) - 1]
        notes.append(f"tier {tier} not kept: check {', '.join(missing)} did not pass; "
                     f"recorded as {lower}")
        tier = lower
    return tier, notes


def require(tier: str, min_tier: str | None, what: str) -> None:
    """Refuse (SandboxError, exit 2) when `tier` is weaker than `min_tier`; never fall back."""
    if min_tier is None:
        return
    if rank(tier) < rank(min_tier):
        raise SandboxError(f"{what} gives tier {tier}, weaker than --min-tier {min_tier}; "
                           "nothing was graded. Use a stronger provider (gvisor, or docker with "
                           "the runsc runtime) or lower --min-tier")
