"""Every sandbox provider, strongest first: the one table the CLI, the demo and the smoke read.

Adding a provider: write a module that follows `provider.Provider`, and add one line here. The
order is the demo's fallback order (the strongest that can start here is used).
"""

from __future__ import annotations

from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import docker, gvisor, process
from plimsoll_ci.sandbox.provider import Provider

PROVIDERS: dict[str, Provider] = {
    "gvisor": gvisor,
    "docker": docker,
    "process": process,
}


def get(name: str) -> Provider:
    """The provider called `name`; BadInput naming the choices when there is none."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise BadInput(f"provider {name!r}: unknown; use one of {', '.join(PROVIDERS)}") from None


def strongest_available() -> tuple[str, list[str]]:
    """The strongest provider that can start here, and why each stronger one cannot."""
    skipped: list[str] = []
    for name, provider in PROVIDERS.items():
        ok, why = provider.available()
        if ok:
            return name, skipped
        skipped.append(f"{name}: {why or 'not available'}")
    raise BadInput("no sandbox provider can start here: " + "; ".join(skipped))
