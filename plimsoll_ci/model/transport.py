"""One POST to the endpoint, retried: 429, 408, 5xx, timeouts and refused connections.

Waits double from `backoff` (with jitter, never above `max_wait`). A `Retry-After` (or
`retry-after-ms`) header is honoured: the next attempt never comes sooner than the server asked,
and when it asks for longer than `max_wait` the attempts end there. Every attempt is logged as an
`Exchange` before anything else happens, so a session's record holds every request it sent.

Deadlines: `timeout` bounds one whole attempt (connect, headers, body), however slowly the server
trickles it: a watchdog thread cuts the connection at the deadline, or at once when the run is
stopped (`Line.cancel`, set on Ctrl-C or SIGTERM). A session's wall clock (`Line.until`) cuts the
attempt too. A reply over `MAX_REPLY_BYTES` is an error, not retried, never held whole in memory.

The key goes out only as `Authorization: Bearer KEY` (the header the recorder redacts). Every
answer's body is scrubbed of it (plain, JSON-escaped, base64: `plimsoll_ci.scrub`) as soon as it is
read, before it is hashed, parsed or logged, and so is any server text that reaches an error.
Errors name the URL the user gave (`--base-url`), not a local recording proxy in between.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import random
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from plimsoll_ci import __version__
from plimsoll_ci.model.config import ApiKey, Endpoint, ModelConfig
from plimsoll_ci.model.errors import EndpointError

MAX_REPLY_BYTES = 64 * 1024 * 1024  # one answer's body; larger is an error (documented)
_RETRIED = frozenset({408, 429}) | frozenset(range(500, 600))
_TICK = 0.1  # how often the watchdog looks at the clock and the stop


@dataclass(frozen=True)
class Exchange:
    """One HTTP request sent to the endpoint and what came back."""

    turn: int  # which ask of the session (1-based)
    attempt: int  # 1 for the first try, 2 for the first retry, ...
    status: int | None  # None when no answer came (timeout, refused, cut)
    seconds: float
    request_sha256: str  # the body as sent: the recorder's `body_sha256` of the same request
    request_bytes: int
    response_sha256: str  # "" when no body came back (of the body scrubbed of the key)
    response_bytes: int
    tokens: int = 0  # what this request was charged (0 unless it was answered with a reply)
    estimated: bool = False  # True when `tokens` is an estimate (no usable `usage`)
    error: str = ""  # "" for a 200; otherwise what went wrong, scrubbed of the key
    # `usage.total_tokens` as the endpoint wrote it, when it is beyond what JSON carries exactly
    # (2**53 - 1): `tokens` is then that bound; "" otherwise (and left out of the transcript)
    reported_tokens: str = ""


class Line(NamedTuple):
    """Where one session's requests go and under which bounds."""

    endpoint: Endpoint  # where requests are sent (a recording proxy, maybe)
    shown: str  # the URL errors name: the --base-url the user gave
    key: ApiKey
    config: ModelConfig
    cancel: threading.Event | None = None  # set: abandon the request in flight at once
    until: float | None = None  # time.monotonic() when the session's wall clock runs out


class Posted(NamedTuple):
    """The outcome of one POST with its retries."""

    body: bytes | None  # the 200 answer's body, scrubbed; None when stopped
    stopped: str | None  # "rate_limit" or "time_limit" when body is None


class _Answer(NamedTuple):
    status: int
    headers: http.client.HTTPMessage
    body: bytes


class _Cut(Exception):
    """The watchdog cut the connection: `why` is "deadline", "time_limit" or "cancelled"."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _TooLarge(Exception):
    """The reply is over MAX_REPLY_BYTES."""


def post(line: Line, body: bytes, log: list[Exchange], turn: int) -> Posted:
    """POST `body` to the chat-completions path, retried within the config's bounds.

    Returns the 200 body (scrubbed of the key), or `stopped` when 429s outlasted the retries (or
    asked for a wait beyond `max_wait`) or the session's wall clock ran out; raises EndpointError
    for other failures and when the run is stopped. Appends one Exchange per attempt."""
    config, key = line.config, line.key
    sent_sha = hashlib.sha256(body).hexdigest()
    last_error = ""
    status: int | None = None
    for attempt in range(1, config.retries + 2):
        start = time.monotonic()
        if line.until is not None and start >= line.until:
            return Posted(None, "time_limit")
        answer: _Answer | None = None
        unverified = too_large = False
        try:
            answer = _once(line, body, start)
            status = answer.status
        except _Cut as e:
            status = None
            if e.why == "cancelled":
                raise EndpointError(f"{line.shown}: the request was abandoned (the run was "
                                    "stopped)", None) from None
            last_error = (f"no answer within {config.timeout:g} s" if e.why == "deadline" else
                          "the session's time ran out during the request")
        except _TooLarge:
            status, too_large = None, True
            last_error = f"the reply is over the bound of one reply ({MAX_REPLY_BYTES} bytes)"
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
            return Posted(answer.body, None)
        if status is not None and status not in _RETRIED:
            raise EndpointError(_refusal(line.shown, status, last_error), status)
        if unverified:
            raise EndpointError(f"{line.shown}: {last_error}; check --base-url, or the "
                                "system's trusted certificates", None)
        if too_large:
            raise EndpointError(f"{line.shown}: {last_error}; not retried", None)
        if line.until is not None and time.monotonic() >= line.until:
            return Posted(None, "time_limit")
        if asked is not None and asked > config.max_wait:
            break
        if attempt > config.retries:
            break
        wait = min(config.backoff * 2 ** (attempt - 1), config.max_wait)
        wait = random.uniform(wait / 2, wait)  # jitter: parallel sessions do not retry in step
        if line.until is not None:  # never wait past the session's wall clock
            wait = min(wait, max(line.until - time.monotonic(), 0.0))
            asked = None if asked is None else min(asked, max(line.until - time.monotonic(), 0.0))
        if line.cancel is not None and line.cancel.wait(max(wait, asked or 0.0)):
            raise EndpointError(f"{line.shown}: the request was abandoned (the run was "
                                "stopped)", None)
        if line.cancel is None:
            time.sleep(max(wait, asked or 0.0))
    if status == 429:
        return Posted(None, "rate_limit")
    raise EndpointError(f"{line.shown}: gave up after {attempt} attempt(s); "
                        f"last: {last_error}", status)


def _watch(conn: http.client.HTTPConnection, line: Line, deadline: float,
           done: threading.Event, cut: list[str]) -> None:
    """Cut `conn` at `deadline`, when the session's time runs out, or when the run is stopped:
    a blocked read then returns at once, however slowly the server was trickling."""
    while not done.wait(_TICK):
        now = time.monotonic()
        if line.cancel is not None and line.cancel.is_set():
            cut.append("cancelled")
        elif line.until is not None and now >= line.until:
            cut.append("time_limit")
        elif now >= deadline:
            cut.append("deadline")
        else:
            continue
        sock = conn.sock
        if sock is not None:
            try:  # the plain socket's shutdown, under TLS too: the reader sees the end at once
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass
        return


def _once(line: Line, body: bytes, start: float) -> _Answer:
    endpoint = line.endpoint
    deadline = start + line.config.timeout
    conn_cls = (http.client.HTTPSConnection if endpoint.scheme == "https"
                else http.client.HTTPConnection)
    conn = conn_cls(endpoint.host, endpoint.port, timeout=line.config.timeout)
    done = threading.Event()
    cut: list[str] = []  # why the watchdog cut the connection, if it did
    threading.Thread(target=_watch, args=(conn, line, deadline, done, cut), daemon=True,
                     name="model-request-watchdog").start()
    try:
        conn.request("POST", endpoint.chat_path, body=body, headers={
            "Authorization": f"Bearer {line.key.reveal()}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"plimsoll-ci/{__version__}",
        })
        resp = conn.getresponse()
        chunks, size = [], 0
        while True:
            piece = resp.read1(65536)  # what has arrived: a trickle cannot hold a read open
            if not piece:
                break
            size += len(piece)
            if size > MAX_REPLY_BYTES:
                raise _TooLarge
            chunks.append(piece)
            if cut:
                break
        if cut:
            raise _Cut(cut[0])
        # scrubbed before anything else sees it: the hash, the parser, the log, an error
        return _Answer(resp.status, resp.headers, line.key.scrubber.bytes(b"".join(chunks)))
    except (OSError, http.client.HTTPException, ValueError, AttributeError):
        if cut:  # whatever the cut connection raised, the cut is the reason
            raise _Cut(cut[0]) from None
        raise
    finally:
        done.set()
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
    text = key.scrub(body.decode("utf-8", "replace"))
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


def shown_url(base_url: str) -> str:
    """The chat-completions URL of `--base-url`, as errors name it."""
    return base_url.rstrip("/") + "/chat/completions"


def _refusal(shown: str, status: int, error: str) -> str:
    hint = {
        401: "check the key in the variable --api-key-env names",
        403: "the key is not allowed this model or endpoint",
        404: "check --base-url (it usually ends in /v1) and --model",
    }.get(status, "the request was not retried")
    return f"{shown}: {error}; {hint}"
