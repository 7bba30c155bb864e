"""A recording reverse proxy for model endpoints (OpenAI-compatible and others).

A harness points its base URL at the proxy; the proxy writes every request exactly as it was
sent (method, target, headers in order, body bytes) to disk *before* forwarding it, then forwards
it to the upstream and streams the answer back while recording it. The tripwire
(`plimsoll_ci.tripwire.requests`) reads what was recorded.

On-disk format `plimsoll-record/1` (one set of files per request, NNNNNN counts from 000001):

    NNNNNN.request.json   {"format": "plimsoll-record/1", "seq", "time", "client", "method",
                           "target", "upstream", "headers": [[name, value], ...],
                           "body": "NNNNNN.request.body", "body_bytes", "body_sha256",
                           "redacted": [header names whose values were replaced]}
    NNNNNN.request.body   the request body, byte for byte as the client sent it
    NNNNNN.response.json  {"format": "plimsoll-record/1", "seq", "status", "reason",
                           "headers": [[name, value], ...], "body": "NNNNNN.response.body",
                           "body_bytes", "body_sha256", "streamed", "error"}
    NNNNNN.response.body  the response body as the upstream sent it (after de-chunking)

Credentials (Authorization, x-api-key, api-key, x-goog-api-key, Cookie, Proxy-Authorization, and a
`key=` query parameter) are written as "[redacted]" unless `keep_credentials` is set: a recording
is meant to be shared with auditors, an API key is not. The body is never altered.
"""

from __future__ import annotations

import hashlib
import http.client
import http.server
import itertools
import json
import os
import socketserver
import sys
import threading
import time
import urllib.parse
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.tripwire.formats import CREDENTIAL_REDACTED as REDACTED
from plimsoll_ci.tripwire.formats import RECORD_FORMAT

# Headers that belong to one hop of HTTP, not to the request (RFC 9110 section 7.6.1).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
_CREDENTIAL_QUERY = frozenset({"key", "api_key", "api-key"})
_MAX_BODY = 512 * 1024 * 1024  # a request larger than this is refused with 413


class Upstream(NamedTuple):
    """Where the proxy forwards to."""

    scheme: str  # "http" or "https"
    host: str
    port: int
    prefix: str  # path prefix, no trailing "/"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}{self.prefix}"


def parse_upstream(url: str) -> Upstream:
    """Parse `--upstream`; BadInput when it is not an absolute http(s) URL."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(
            f"--upstream {url!r}: not an http:// or https:// URL; "
            "give the endpoint's base, e.g. https://api.openai.com"
        )
    if parts.query or parts.fragment:
        raise BadInput(f"--upstream {url!r}: drop the query and fragment; give the base URL only")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        raise BadInput(f"--upstream {url!r}: bad port ({e})") from None
    return Upstream(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


def redact_target(target: str) -> tuple[str, bool]:
    """The request target with credential query parameters replaced; (target, changed)."""
    path, sep, query = target.partition("?")
    if not sep:
        return target, False
    changed = False
    out = []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        if eq and urllib.parse.unquote_plus(name).lower() in _CREDENTIAL_QUERY:
            out.append(f"{name}={urllib.parse.quote(REDACTED)}")
            changed = True
        else:
            out.append(item)
    return path + "?" + "&".join(out), changed


def _write_atomic(path: str, data: bytes) -> None:
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _json_bytes(doc: dict) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class Recorder:
    """Numbers requests and writes their files; safe to share between threads."""

    def __init__(self, out: str, upstream: Upstream, keep_credentials: bool = False) -> None:
        self.out = out
        self.upstream = upstream
        self.keep_credentials = keep_credentials
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise BadInput(f"--out {out}: cannot make the folder ({e.strerror}); "
                           "give a folder path") from None
        existing = [n for n in os.listdir(out) if n.endswith(".request.json")]
        start = 1 + max((int(n.split(".")[0]) for n in existing if n.split(".")[0].isdigit()),
                        default=0)
        self._counter = itertools.count(start)
        self._lock = threading.Lock()

    def next_seq(self) -> int:
        with self._lock:
            return next(self._counter)

    def _headers(self, headers: list[tuple[str, str]]) -> tuple[list[list[str]], list[str]]:
        out, redacted = [], []
        for name, value in headers:
            if not self.keep_credentials and name.lower() in _CREDENTIAL_HEADERS:
                out.append([name, REDACTED])
                redacted.append(name)
            else:
                out.append([name, value])
        return out, redacted

    def write_request(self, seq: int, client: str, method: str, target: str,
                      headers: list[tuple[str, str]], body: bytes) -> None:
        """Write NNNNNN.request.body then NNNNNN.request.json (the latter marks it complete)."""
        stem = os.path.join(self.out, f"{seq:06d}")
        recorded_headers, redacted = self._headers(headers)
        if not self.keep_credentials:
            target, changed = redact_target(target)
            if changed:
                redacted.append("?key")
        _write_atomic(stem + ".request.body", body)
        doc = {
            "format": RECORD_FORMAT,
            "seq": seq,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "client": client,
            "method": method,
            "target": target,
            "upstream": self.upstream.origin,
            "headers": recorded_headers,
            "body": f"{seq:06d}.request.body",
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "redacted": redacted,
        }
        _write_atomic(stem + ".request.json", _json_bytes(doc))

    def write_response(self, seq: int, status: int, reason: str, headers: list[tuple[str, str]],
                       body: bytes, streamed: bool, error: str = "") -> None:
        stem = os.path.join(self.out, f"{seq:06d}")
        recorded_headers, _ = self._headers(headers)
        _write_atomic(stem + ".response.body", body)
        doc = {
            "format": RECORD_FORMAT,
            "seq": seq,
            "status": status,
            "reason": reason,
            "headers": recorded_headers,
            "body": f"{seq:06d}.response.body",
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "streamed": streamed,
            "error": error,
        }
        _write_atomic(stem + ".response.json", _json_bytes(doc))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "plimsoll-record"
    recorder: Recorder  # set on the subclass made by make_server
    quiet: bool = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        if not self.quiet:
            sys.stderr.write(f"plimsoll-ci record: {self.address_string()} {format % args}\n")

    def _read_body(self) -> bytes:
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers are dropped
                    break
                total += size
                if total > _MAX_BODY:
                    raise ValueError("request body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        rec = self.recorder
        seq = rec.next_seq()
        try:
            body = self._read_body()
        except ValueError as e:
            self.send_error(413 if "large" in str(e) else 400, str(e))
            return
        headers = list(self.headers.items())
        try:
            rec.write_request(seq, self.client_address[0], self.command, self.path, headers, body)
        except OSError as e:
            # fail closed: a request that cannot be recorded is not sent to the model
            self.send_error(500, f"plimsoll-ci record: cannot write the record ({e.strerror}); "
                                 "the request was not forwarded")
            return

        up = rec.upstream
        forward = [(k, v) for k, v in headers
                   if k.lower() not in _HOP_BY_HOP
                   and k.lower() not in ("host", "content-length", "expect")]
        conn_cls = (http.client.HTTPSConnection if up.scheme == "https"
                    else http.client.HTTPConnection)
        conn = conn_cls(up.host, up.port, timeout=600)
        try:
            conn.putrequest(self.command, up.prefix + self.path, skip_host=True,
                            skip_accept_encoding=True)
            default_port = 443 if up.scheme == "https" else 80
            conn.putheader("Host", up.host if up.port == default_port else f"{up.host}:{up.port}")
            for k, v in forward:
                conn.putheader(k, v)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            msg = f"upstream {up.origin} unreachable: {e.__class__.__name__}"
            try:
                rec.write_response(seq, 502, "Bad Gateway", [], b"", False, error=msg)
            except OSError:
                pass  # the client hears of the failure below either way
            self.send_error(502, msg)
            return

        resp_headers = list(resp.getheaders())
        no_body = self.command == "HEAD" or resp.status in (204, 304) or resp.status < 200
        # A response with a length is read whole and recorded before the client sees a byte;
        # one without (server-sent events, chunked) passes through as it arrives and is recorded
        # when it ends.
        streamed = resp.getheader("Content-Length") is None and not no_body
        if not streamed:
            try:
                body_back = b"" if no_body else resp.read()
                error = ""
            except (OSError, http.client.HTTPException) as e:
                body_back, error = b"", f"upstream cut: {e.__class__.__name__}"
            conn.close()
            try:
                rec.write_response(seq, resp.status, resp.reason, resp_headers, body_back, False,
                                   error=error)
            except OSError as e:
                error = f"cannot write the response record ({e.strerror})"
            if error:
                self.send_error(502, error)
                return
            self._send_head(resp.status, resp.reason, resp_headers, chunked=False)
            if body_back:
                self.wfile.write(body_back)
            self.wfile.flush()
            return

        self._send_head(resp.status, resp.reason, resp_headers, chunked=True)
        got: list[bytes] = []
        error = ""
        try:
            while True:
                # read1 returns what has arrived, so server-sent events pass through one by one
                piece = resp.read1(65536)
                if not piece:
                    break
                got.append(piece)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
        except (OSError, http.client.HTTPException) as e:
            error = f"stream cut: {e.__class__.__name__}"
            self.close_connection = True
        conn.close()
        # recorded before the last chunk, so a client that saw the end finds the record complete
        try:
            rec.write_response(seq, resp.status, resp.reason, resp_headers, b"".join(got), True,
                               error=error)
        except OSError as e:
            # the client never sees a clean end of a stream whose record is missing
            error = f"cannot write the response record ({e.strerror})"
            self.close_connection = True
        if not error:
            try:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    def _send_head(self, status: int, reason: str, headers: list[tuple[str, str]],
                   chunked: bool) -> None:
        self.send_response(status, reason)
        for k, v in headers:
            if k.lower() not in _HOP_BY_HOP:
                self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(upstream: str, out: str, host: str = "127.0.0.1", port: int = 0,
                keep_credentials: bool = False, quiet: bool = True) -> http.server.HTTPServer:
    """A ready, not yet serving, recording proxy; `server.server_address` has the bound port."""
    recorder = Recorder(out, parse_upstream(upstream), keep_credentials)
    handler = type("RecordHandler", (_Handler,), {"recorder": recorder, "quiet": quiet})
    try:
        return _Server((host, port), handler)
    except OSError as e:
        raise BadInput(f"--port {port}: cannot listen on {host}:{port} ({e.strerror}); "
                       "pick another port or 0 for any free one") from None


def start_in_thread(upstream: str, out: str, host: str = "127.0.0.1", port: int = 0,
                    keep_credentials: bool = False) -> tuple[http.server.HTTPServer, str]:
    """Start a proxy on a daemon thread; returns (server, base URL). Call server.shutdown()."""
    server = make_server(upstream, out, host, port, keep_credentials)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    bound_host, bound_port = server.server_address[:2]
    return server, f"http://{bound_host}:{bound_port}"
