"""plimsoll-ci: keep answer keys out of AI agents' sandboxes, and prove it."""

from __future__ import annotations

__version__ = "0.1.0"
