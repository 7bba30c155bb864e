"""One POST to the endpoint, retried: 429, 408, 5xx, timeouts and refused connections.

Waits double from `backoff` (with jitter, never above `max_wait`). A `Retry-After` (or
`retry-after-ms`) header is honoured: the next attempt never comes sooner than the server asked,
and when it asks for longer than `max_wait` the attempts end there. Every attempt is logged as an
`Exchange` before anything else happens, so a session's record holds every request it sent.

The key goes out only as `Authorization: Bearer KEY` (the header the recorder redacts) and is
scrubbed from any server text that reaches an error or the log.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import random
import ssl
import time
from dataclasses import dataclass
from typing import NamedTuple

from plimsoll_ci import __version__
from plimsoll_ci.model.config import ApiKey, Endpoint, ModelConfig
from plimsoll_ci.model.errors import EndpointError

MAX_REPLY_BYTES = 64 * 1024 * 1024
_RETRIED = frozenset({408, 429}) | frozenset(range(500, 600))


@dataclass(frozen=True)
class Exchange:
    """One HTTP request sent to the endpoint and what came back."""

    turn: int  # which ask of the session (1-based)
    attempt: int  # 1 for the first try, 2 for the first retry, ...
    status: int | None  # None when no answer came (timeout, refused, cut)
    seconds: float
    request_sha256: str  # the body as sent: the recorder's `body_sha256` of the same request
    request_bytes: int
    response_sha256: str  # "" when no body came back
    response_bytes: int
    tokens: int = 0  # what this request was charged (0 unless it was answered with a reply)
    estimated: bool = False  # True when `tokens` is an estimate (no usable `usage`)
    error: str = ""  # "" for a 200; otherwise what went wrong, scrubbed of the key


class Posted(NamedTuple):
    """The outcome of one POST with its retries."""

    body: bytes | None  # the 200 answer's body; None when rate-limited
    rate_limited: bool


class _Answer(NamedTuple):
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def post(endpoint: Endpoint, key: ApiKey, body: bytes, config: ModelConfig,
         log: list[Exchange], turn: int) -> Posted:
    """POST `body` to the chat-completions path, retried within the config's bounds.

    Returns the 200 body, or `rate_limited` when 429s outlasted the retries (or asked for a wait
    beyond `max_wait`); raises EndpointError for other failures. Appends one Exchange per attempt."""
    sent_sha = hashlib.sha256(body).hexdigest()
    last_error = ""
    status: int | None = None
    for attempt in range(1, config.retries + 2):
        start = time.monotonic()
        answer: _Answer | None = None
        unverified = False
        try:
            answer = _once(endpoint, key, body, config.timeout)
            status = answer.status
        except TimeoutError:
            status, last_error = None, f"no answer within {config.timeout:g} s"
        except ssl.SSLCertVerificationError as e:
            # not retried, never skipped: a server that cannot prove who it is gets no key
            status, unverified = None, True
            last_error = f"the server's TLS certificate did not verify ({e.verify_message})"
        except (OSError, http.client.HTTPException) as e:
            status, last_error = None, f"connection failed ({e.__class__.__name__})"
        asked = None
        if answer is not None and status != 200:
            last_error = f"HTTP {status}: {_server_says(answer.body, key)}"
            asked = _retry_after(answer.headers)
            if asked is not None and asked > config.max_wait:
                last_error += (f" (asked to wait {asked:g} s, longer than the "
                               f"{config.max_wait:g} s bound)")
        log.append(Exchange(
            turn, attempt, status, round(time.monotonic() - start, 3), sent_sha, len(body),
            hashlib.sha256(answer.body).hexdigest() if answer is not None and answer.body else "",
            len(answer.body) if answer is not None else 0,
            error="" if status == 200 else last_error))
        if answer is not None and status == 200:
            return Posted(answer.body, False)
        if status is not None and status not in _RETRIED:
            raise EndpointError(_refusal(endpoint, status, last_error), status)
        if unverified:
            raise EndpointError(f"{_origin(endpoint)}: {last_error}; check --base-url, or the "
                                "system's trusted certificates", None)
        if asked is not None and asked > config.max_wait:
            break
        if attempt > config.retries:
            break
        wait = min(config.backoff * 2 ** (attempt - 1), config.max_wait)
        wait = random.uniform(wait / 2, wait)  # jitter: parallel sessions do not retry in step
        time.sleep(max(wait, asked or 0.0))
    if status == 429:
        return Posted(None, True)
    raise EndpointError(f"{_origin(endpoint)}: gave up after {attempt} attempt(s); "
                        f"last: {last_error}", status)


def _once(endpoint: Endpoint, key: ApiKey, body: bytes, timeout: float) -> _Answer:
    conn_cls = (http.client.HTTPSConnection if endpoint.scheme == "https"
                else http.client.HTTPConnection)
    conn = conn_cls(endpoint.host, endpoint.port, timeout=timeout)
    deadline = time.monotonic() + timeout
    try:
        conn.request("POST", endpoint.chat_path, body=body, headers={
            "Authorization": f"Bearer {key.reveal()}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"plimsoll-ci/{__version__}",
        })
        resp = conn.getresponse()
        chunks, size = [], 0
        while True:
            piece = resp.read(65536)
            if not piece:
                break
            size += len(piece)
            if size > MAX_REPLY_BYTES:
                raise http.client.HTTPException("reply larger than the bound")
            chunks.append(piece)
            if time.monotonic() > deadline:  # a server that drips its reply still times out
                raise TimeoutError
        return _Answer(resp.status, resp.headers, b"".join(chunks))
    finally:
        conn.close()


def _retry_after(headers: http.client.HTTPMessage) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, or `Retry-After` as seconds or an
    HTTP date), or None."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _server_says(body: bytes, key: ApiKey) -> str:
    """The server's error message, short and scrubbed of the key."""
    text = body.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            text = str(doc["error"].get("message") or text)
        elif isinstance(doc, dict) and isinstance(doc.get("error"), str):
            text = doc["error"]
    except ValueError:
        pass
    text = " ".join(key.scrub(text).split())
    return (text[:200] + "...") if len(text) > 200 else (text or "(no message)")


def _origin(endpoint: Endpoint) -> str:
    return f"{endpoint.scheme}://{endpoint.host}:{endpoint.port}{endpoint.chat_path}"


def _refusal(endpoint: Endpoint, status: int, error: str) -> str:
    hint = {
        401: "check the key in the variable --api-key-env names",
        403: "the key is not allowed this model or endpoint",
        404: "check --base-url (it usually ends in /v1) and --model",
    }.get(status, "the request was not retried")
    return f"{_origin(endpoint)}: {error}; {hint}"
