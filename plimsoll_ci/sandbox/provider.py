"""The sandbox provider protocol: what one provider module offers the grader.

A provider is a module (like a language in pre-commit's `all_languages.py`) with these four
functions. Adding one is one file here and one line in `all_providers.PROVIDERS`; the CLI's
`--provider` choices, the demo's strongest-first fallback and the smoke check all read that table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from plimsoll_ci.sandbox.session import Limits, Session
    from plimsoll_ci.sandbox.stage import Stage


class Provider(Protocol):
    """A way to start the runner in a sandbox, and the tier it is configured as."""

    def configured_tier(self) -> str:
        """The tier this provider is configured as, before any start-up check ran."""
        ...

    def available(self) -> tuple[bool, str]:
        """Whether it can start a sandbox here, and if not, why (a sentence a user can act on)."""
        ...

    def start(self, stage: Stage, limits: Limits) -> Session:
        """Start the runner on `stage` under `limits` (no protocol spoken yet); its evidence is
        `session.host_evidence`. Raises SandboxError when it cannot start."""
        ...

    def retry_start(self, stderr: str) -> bool:
        """After a sandbox exited before its runner said hello: True when the provider changed how
        it starts (because of what `stderr` says) and one more start may work."""
        ...
