"""The one exception hierarchy; the CLI catches it once at the edge and prints it plainly."""

from __future__ import annotations


class PlimsollError(Exception):
    """Base of every error plimsoll-ci reports to a user. Messages never carry a withheld value."""

    exit_code = 2


class BadInput(PlimsollError):
    """A missing path, a malformed file, a wrong key: the user must fix something (exit 2)."""


class WithheldSetError(BadInput):
    """A withheld set that cannot be read, parsed, or used with the given key."""


class ConfigError(BadInput):
    """A `plimsoll.yaml` that is malformed; the message names the file and line."""


class SandboxError(PlimsollError):
    """A sandbox that cannot be started at the tier that was asked for."""


class VerifyError(PlimsollError):
    """A bundle or envelope that does not verify."""

    exit_code = 1
