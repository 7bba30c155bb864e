"""Errors of a model session; none carries the API key (server text is scrubbed of it first).

A configuration that cannot start (no key, no budget, a bad URL) is `plimsoll_ci.errors.BadInput`
(exit 2). A rate limit or a spent budget is not an error: the session stops and says so.
"""

from __future__ import annotations

from plimsoll_ci.errors import PlimsollError


class ModelError(PlimsollError):
    """Base of the errors a model session raises."""


class EndpointError(ModelError):
    """The endpoint did not answer usefully: a 4xx other than 429, or 5xx / timeouts / refused
    connections on every attempt. `status` is the last HTTP status (None when nothing came back)."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


class MalformedReply(ModelError):
    """A 200 answer that is not a chat completion (not JSON, or a field missing or mistyped).

    Its tokens are counted; a caller usually treats the turn as one that proposed nothing."""
