"""The one exception hierarchy; the CLI catches it once at the edge and prints it plainly."""

from __future__ import annotations


class PlimsollError(Exception):
    """Base of every error plimsoll-ci reports to a user. Messages never carry a withheld value.

    A message is one line; `details` (every problem of a check that reports them all at once)
    are printed one an indented line each. The CLI prints both through `names.shown`, so a
    line break inside a name is escaped and cannot forge a line.
    """

    exit_code = 2

    def __init__(self, message: str = "", details: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)

    def __str__(self) -> str:
        return "\n  ".join((super().__str__(), *getattr(self, "details", ())))


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
