"""What a model client is configured with, and the API key it reads from the environment.

`ModelConfig` holds no secret: it is safe to print, log and sign. The key lives in an `ApiKey`,
read from the environment variable the config names; its repr is `ApiKey([redacted])`, so it never
appears in a traceback's message, a log line or a recording made with `repr`.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from plimsoll_ci.envname import said
from plimsoll_ci.errors import BadInput

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
REDACTED = "[redacted]"
MAX_COUNT = 2**53 - 1  # the largest count RFC 8785 JSON (a signed record) carries exactly
MAX_SESSION_SECONDS = 7 * 24 * 3600.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ModelConfig:
    """One OpenAI-compatible endpoint and model, the run's token budget, and the retry bounds."""

    base_url: str  # e.g. http://127.0.0.1:8000/v1 (requests go to {base_url}/chat/completions)
    model: str
    max_tokens: int  # total budget of the run, counted from the responses' `usage`
    api_key_env: str = DEFAULT_KEY_ENV  # the variable's NAME; the key never enters a config
    timeout: float = 120.0  # seconds one request may take before it is abandoned
    retries: int = 4  # further attempts after a 429, a 5xx, a timeout or a refused connection
    backoff: float = 1.0  # first wait between attempts; doubled each time
    max_wait: float = 60.0  # longest wait; a Retry-After beyond it ends the attempts at once
    session_seconds: float = 1800.0  # wall clock of one session (requests, tools, waits)
    calls_per_reply: int = 8  # tool calls of one reply that are run; the rest get an error
    calls_per_session: int = 120  # tool calls of one session; then the session stops

    def __post_init__(self) -> None:
        endpoint(self.base_url)  # BadInput when it is not a plain http(s) URL
        if not self.model:
            raise BadInput("--model: give the model's name as the endpoint knows it, "
                           "e.g. --model gpt-4o-mini")
        if not _ENV_NAME.fullmatch(self.api_key_env or ""):
            # never echoed: a key given here by mistake must not be printed back
            raise BadInput("--api-key-env takes the NAME of an environment variable (letters, "
                           "digits, _), not a key; export the key in a variable and name it")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) \
                or self.max_tokens <= 0:
            raise BadInput(f"--max-tokens {self.max_tokens}: give the run's total token budget "
                           "as a positive integer, e.g. --max-tokens 200000")
        if not self.timeout > 0:
            raise BadInput(f"--request-timeout {self.timeout}: give a positive number of seconds")
        if self.retries < 0:
            raise BadInput(f"--max-retries {self.retries}: give 0 or more")
        if not 0 < self.session_seconds <= MAX_SESSION_SECONDS:
            raise BadInput(f"--session-seconds {self.session_seconds}: give seconds between 0 "
                           f"and {MAX_SESSION_SECONDS:g}")
        if self.calls_per_reply < 1 or self.calls_per_session < 1:
            raise BadInput(f"--max-tool-calls-per-reply {self.calls_per_reply} / --max-tool-calls "
                           f"{self.calls_per_session}: give 1 or more")
        if self.max_tokens > MAX_COUNT:
            raise BadInput(f"--max-tokens {self.max_tokens}: at most {MAX_COUNT} (what a signed "
                           "record's JSON carries exactly)")
        if self.backoff < 0 or self.max_wait < 0:
            raise BadInput("backoff and max_wait are seconds and cannot be negative")


class Endpoint(NamedTuple):
    """Where chat-completion requests go."""

    scheme: str  # "http" or "https"
    host: str
    port: int
    prefix: str  # path of the base URL, no trailing "/" (e.g. "/v1")

    @property
    def chat_path(self) -> str:
        return self.prefix + "/chat/completions"


def endpoint(base_url: str) -> Endpoint:
    """Parse `--base-url`; BadInput when it is not a plain http(s) URL (no credentials in it)."""
    parts = urllib.parse.urlsplit(base_url or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(f"--base-url {base_url!r}: not an http:// or https:// URL; give the "
                       "endpoint's base, e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        # a key in the URL would sit in argv and in every log; it belongs in --api-key-env
        raise BadInput("--base-url: drop the user, password, query and fragment (a key there "
                       "would be on the command line); put the key in the variable --api-key-env "
                       "names")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise BadInput(f"--base-url {base_url!r}: bad port") from None
    return Endpoint(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


class ApiKey:
    """An API key that never shows itself: `str()` and `repr()` give `[redacted]`."""

    __slots__ = ("_scrubber", "_value")

    def __init__(self, value: str) -> None:
        from plimsoll_ci.scrub import Scrubber

        self._value = value
        self._scrubber = Scrubber([value])

    def reveal(self) -> str:
        """The key itself: only for the Authorization header."""
        return self._value

    @property
    def scrubber(self) -> Any:  # plimsoll_ci.scrub.Scrubber
        """What replaces the key wherever an answer reflects it (plain, JSON-escaped, base64)."""
        return self._scrubber

    def scrub(self, text: str) -> str:
        """`text` with every reflection of the key replaced by `[redacted]`."""
        return self._scrubber.text(text)

    def __repr__(self) -> str:
        return f"ApiKey({REDACTED})"

    __str__ = __repr__


def read_key(var: str, environ: Mapping[str, str] | None = None) -> ApiKey:
    """The key from environment variable `var`; BadInput naming the variable when it is unusable."""
    env = os.environ if environ is None else environ
    if not _ENV_NAME.fullmatch(var or ""):
        raise BadInput("--api-key-env takes the NAME of an environment variable (letters, "
                       "digits, _), not a key; export the key in a variable and name it")
    value = (env.get(var) or "").strip()
    if not value:
        var = said(var)  # a key given in place of the name is never printed back
        raise BadInput(f"the API key: environment variable {var} is not set or empty; export it "
                       f"(from a CI secret, e.g. `export {var}=...`) or name another variable "
                       "with --api-key-env (a local server that needs no key takes any value)")
    if any(not 0x21 <= ord(c) <= 0x7E for c in value):
        # http.client would quote the whole header, key included, in its error
        raise BadInput(f"the API key in {var} has characters an HTTP header cannot carry "
                       "(a space, a line break, non-ASCII); check how the variable was set")
    return ApiKey(value)
