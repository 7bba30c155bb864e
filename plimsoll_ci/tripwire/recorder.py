"""The recording reverse proxy behind `plimsoll-ci record` (OpenAI, Anthropic, Gemini and others).

A harness points its base URL at the proxy. The proxy writes every request exactly as it was sent
(method, target, headers in order, body bytes) into its folder *before* forwarding it, then
forwards it to the upstream and passes the answer back while recording it
(`plimsoll_ci.tripwire.recording` has the folder's format and rules). The tripwire
(`plimsoll_ci.tripwire.requests`) reads what was recorded.

It fails closed, and says so on standard error:
- a request whose framing is not exact (a `Content-Length` that is not one plain number or does
  not match the body, two of them, `Content-Length` with `Transfer-Encoding`, a transfer coding
  other than chunked, a bad chunk) is answered 400 and neither recorded nor forwarded;
- a request that cannot be recorded is answered 500 and not forwarded;
- an answer that cannot be recorded is not passed on: a whole answer becomes a 500, and a stream
  is ended at the piece that could not be written, with an error event the SDKs raise.
The request's credentials are scrubbed from everything recorded, bodies included, however the
upstream reflects them (`recording.py`); what the client is answered is passed on as it came.
The proxy's own replies are JSON in the API's error shape (`plimsoll_ci.tripwire.apis`), so an SDK
shows their message. `Proxy-Authorization` and the other hop-by-hop headers are for the proxy, not
the upstream: they are recorded (credentials redacted) and not forwarded.
"""

from __future__ import annotations

import email.message
import http.client
import http.server
import io
import re
import socket
import socketserver
import sys
import threading
import urllib.parse
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.tripwire.apis import error_body, stream_error_event, which_api
from plimsoll_ci.tripwire.recording import RecordingFolder, ResponseWriter, redact_target

# Headers that belong to one hop of HTTP, not to the request (RFC 9110 section 7.6.1).
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                         "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"})
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "expect"}
_MAX_BODY = 512 * 1024 * 1024  # a request larger than this is refused with 413
_DIGITS = re.compile(r"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_EVENT_END = re.compile(rb"\r?\n\r?\n")
_DONE = b"data: [DONE]"  # OpenAI's last event: held back until the recording is written


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


class Refused(Exception):
    """A request the proxy will not forward: its HTTP status and why."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


def _read_exactly(rfile: io.BufferedIOBase, n: int, what: str) -> bytes:
    data = rfile.read(n)
    if len(data) != n:
        raise Refused(400, f"{what} ended after {len(data)} of {n} bytes")
    return data


def _read_chunked(rfile: io.BufferedIOBase) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(65537)
        size_text = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not _HEX.fullmatch(size_text):
            raise Refused(400, "a chunk of the chunked body has no valid size line")
        size = int(size_text, 16)
        if size == 0:
            while True:  # trailers are dropped
                trailer = rfile.readline(65537)
                if not trailer.endswith(b"\n"):
                    raise Refused(400, "the chunked body ended before its last line")
                if trailer in (b"\r\n", b"\n"):
                    return b"".join(chunks)
        total += size
        if total > _MAX_BODY:
            raise Refused(413, f"request body over {_MAX_BODY} bytes")
        chunks.append(_read_exactly(rfile, size, "a chunk of the body"))
        if rfile.readline(3) not in (b"\r\n", b"\n"):
            raise Refused(400, "a chunk of the chunked body is longer than its size line says")


def read_body(headers: email.message.Message, rfile: io.BufferedIOBase) -> bytes:
    """The request body, framed exactly as HTTP/1.1 says; `Refused` when it is not."""
    lengths = headers.get_all("Content-Length") or []
    codings = headers.get_all("Transfer-Encoding") or []
    if lengths and codings:
        raise Refused(400, "both Content-Length and Transfer-Encoding are given; send one")
    if codings:
        coding = ",".join(codings).strip().lower()
        if coding != "chunked":
            raise Refused(400, f"Transfer-Encoding {coding!r} is not supported; send chunked or "
                               "a Content-Length")
        return _read_chunked(rfile)
    if len(lengths) > 1:
        raise Refused(400, f"{len(lengths)} Content-Length headers; send one")
    if not lengths:
        return b""
    text = lengths[0].strip()
    if not _DIGITS.fullmatch(text):
        raise Refused(400, f"Content-Length {lengths[0]!r} is not a number of bytes")
    length = int(text)
    if length > _MAX_BODY:
        raise Refused(413, f"request body of {length} bytes is over {_MAX_BODY}")
    return _read_exactly(rfile, length, "the body") if length else b""


def _split_events(buf: bytes, holding: bool) -> tuple[bytes, bytes, bool]:
    """(complete events to pass on now, bytes to keep, holding) for a server-sent event stream.

    Only whole events are passed on (an error event can then follow cleanly), and OpenAI's
    `data: [DONE]` is kept until the recording is written (a client that saw it stops reading).
    """
    if holding:
        return b"", buf, True
    end = 0
    for m in _EVENT_END.finditer(buf):
        end = m.end()
    ready, rest = buf[:end], buf[end:]
    done = ready.find(_DONE)
    if done >= 0:
        start = ready.rfind(b"\n", 0, done) + 1
        return ready[:start], ready[start:] + rest, True
    return ready, rest, False


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "plimsoll-record"
    folder: RecordingFolder  # set on the subclass made by make_server
    upstream: Upstream
    quiet: bool = True

    # ---- what the proxy says ---------------------------------------------------------------

    def say(self, message: str) -> None:
        """A line on standard error (always: failures are never silent)."""
        sys.stderr.write(f"plimsoll-ci record: {message}\n")
        sys.stderr.flush()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        if not self.quiet:
            text = format % args
            # a request line may carry an API key in its query
            text = " ".join(redact_target(w)[0] if "?" in w else w for w in text.split(" "))
            self.say(f"{self.address_string()} {text}")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if not self.quiet:
            self.say(f"{self.address_string()} {self.command} "
                     f"{self.folder.recorded_target(self.path)} {code}")

    def _api(self) -> str:
        headers = getattr(self, "headers", None)
        return which_api(getattr(self, "path", "") or "", headers.keys() if headers else [])

    def reply_error(self, status: int, message: str) -> None:
        """A JSON error in the API's shape; the message names the proxy."""
        body = error_body(self._api(), status, f"plimsoll-ci record: {message}")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if getattr(self, "command", "") != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # the standard library's replies to a malformed request line or header: JSON too
        self.close_connection = True
        self.reply_error(code, message or self.responses.get(code, ("error",))[0])

    # ---- one request -----------------------------------------------------------------------

    def _handle(self) -> None:
        folder = self.folder
        try:
            body = read_body(self.headers, self.rfile)
        except Refused as e:
            self.close_connection = True  # the rest of the connection cannot be framed
            self.reply_error(e.status, f"{e}; the request was not forwarded")
            return
        headers = list(self.headers.items())
        try:
            seq = folder.write_request(self.client_address[0], self.command, self.path,
                                       headers, body)
        except OSError as e:
            self.say(f"cannot write the recording of a {self.command} request "
                     f"({e.strerror}); answered 500, not forwarded")
            self.reply_error(500, f"cannot write the recording ({e.strerror}); "
                                  "the request was not forwarded")
            return
        resp = self._forward(seq, headers, body)
        if resp is None:
            return
        try:
            writer = folder.response(seq, folder.scrubber(self.path, headers))
        except OSError as e:
            resp.close()
            self._unrecorded(seq, f"cannot write the response recording ({e.strerror})")
            return
        no_body = self.command == "HEAD" or resp.status in (204, 304) or resp.status < 200
        # An answer with a length is read whole and recorded before the client sees a byte; one
        # without (server-sent events, chunked) passes through as it arrives, recorded on the way.
        if resp.getheader("Content-Length") is None and not no_body:
            self._relay_stream(seq, resp, writer)
        else:
            self._relay_whole(seq, resp, writer, no_body)

    def _forward(self, seq: int, headers: list[tuple[str, str]],
                 body: bytes) -> http.client.HTTPResponse | None:
        up = self.upstream
        hop = _NOT_FORWARDED | {t.strip().lower() for v in self.headers.get_all("Connection", [])
                                for t in v.split(",")}
        conn_cls = (http.client.HTTPSConnection if up.scheme == "https"
                    else http.client.HTTPConnection)
        conn = conn_cls(up.host, up.port, timeout=600)
        try:
            conn.putrequest(self.command, up.prefix + self.path, skip_host=True,
                            skip_accept_encoding=True)
            default_port = 443 if up.scheme == "https" else 80
            conn.putheader("Host", up.host if up.port == default_port else f"{up.host}:{up.port}")
            for k, v in headers:
                if k.lower() not in hop:
                    conn.putheader(k, v)
            if body or self.command in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            return conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            error = f"upstream {up.origin} unreachable: {e.__class__.__name__}"
            try:
                self.folder.response(seq).finish(502, "Bad Gateway", [], streamed=False,
                                                 error=error, answered=False)
            except OSError as w:
                self.say(f"{seq:06d}: cannot write the response recording ({w.strerror})")
            self.say(f"{seq:06d}: the upstream never answered ({error}); answered 502")
            self.reply_error(502, f"the upstream never answered ({error}); the request was "
                                  f"recorded as {seq:06d}")
            return None

    def _unrecorded(self, seq: int, why: str) -> None:
        self.say(f"{seq:06d}: {why}; the answer was not passed on (500)")
        self.reply_error(500, f"{why}; the answer was not passed on")

    def _relay_whole(self, seq: int, resp: http.client.HTTPResponse, writer: ResponseWriter,
                     no_body: bool) -> None:
        try:
            data = b"" if no_body else resp.read()
            error = ""
        except (OSError, http.client.HTTPException) as e:
            data, error = b"", f"upstream cut: {e.__class__.__name__}"
        resp.close()
        headers = list(resp.getheaders())
        try:
            writer.write(data)
            writer.finish(resp.status, resp.reason, headers, streamed=False, error=error)
        except OSError as e:
            writer.discard()
            self._unrecorded(seq, f"cannot write the response recording ({e.strerror})")
            return
        if error:
            self.say(f"{seq:06d}: {error}; answered 502")
            self.reply_error(502, f"{error}; the answer was recorded as far as it came")
            return
        self._send_head(resp.status, resp.reason, headers, chunked=False)
        if data:
            self.wfile.write(data)
        self.wfile.flush()

    def _relay_stream(self, seq: int, resp: http.client.HTTPResponse,
                      writer: ResponseWriter) -> None:
        headers = list(resp.getheaders())
        sse = (resp.getheader("Content-Type") or "").lower().startswith("text/event-stream")
        self._send_head(resp.status, resp.reason, headers, chunked=True)
        pending, holding, error = b"", False, ""
        try:
            while True:
                # read1 returns what has arrived, so server-sent events pass through one by one
                try:
                    piece = resp.read1(65536)
                except (OSError, http.client.HTTPException) as e:
                    error = f"upstream cut the stream: {e.__class__.__name__}"
                    break
                if not piece:
                    break
                try:
                    writer.write(piece)  # recorded before the client sees it
                except OSError as e:
                    writer.discard()
                    self._end_stream(seq, sse, f"cannot write the response recording "
                                               f"({e.strerror})")
                    return
                if sse:
                    ready, pending, holding = _split_events(pending + piece, holding)
                else:
                    ready = piece
                if ready:
                    self._chunk(ready)
        finally:
            resp.close()
        try:
            writer.finish(resp.status, resp.reason, headers, streamed=True, error=error)
        except OSError as e:
            writer.discard()
            self._end_stream(seq, sse, f"cannot write the response recording ({e.strerror})")
            return
        if error:
            self._end_stream(seq, sse, error)
            return
        if pending:
            self._chunk(pending)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _end_stream(self, seq: int, sse: bool, why: str) -> None:
        """End a stream at once with an error the client sees; never a clean end."""
        self.say(f"{seq:06d}: {why}; the stream to the client was ended with an error")
        self.close_connection = True  # no last chunk: the stream is cut
        if sse:
            try:
                self._chunk(stream_error_event(self._api(), f"plimsoll-ci record: {why}; the "
                                                            "stream was ended here"))
            except OSError:
                pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

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
    # socketserver's backlog is 5: twenty requests an agent sends at once on a loaded machine
    # overflowed it, and the kernel reset the connections it could not queue
    request_queue_size = 128
    folder: RecordingFolder

    def server_close(self) -> None:
        super().server_close()
        self.folder.close()

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket],
                     client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client that went away mid-answer: nothing the proxy could do
        super().handle_error(request, client_address)


def make_server(upstream: str, out: str, host: str = "127.0.0.1", port: int = 0,
                keep_credentials: bool = False, quiet: bool = True) -> http.server.HTTPServer:
    """A ready, not yet serving, recording proxy; `server.server_address` has the bound port.

    It holds `out`'s lock until `server_close()`; BadInput when another recorder holds it.
    """
    up = parse_upstream(upstream)
    folder = RecordingFolder(out, up.origin, keep_credentials)
    handler = type("RecordHandler", (_Handler,), {"folder": folder, "upstream": up,
                                                  "quiet": quiet})
    try:
        server = _Server((host, port), handler)
    except OSError as e:
        folder.close()
        raise BadInput(f"--port {port}: cannot listen on {host}:{port} ({e.strerror}); "
                       "pick another port or 0 for any free one") from None
    server.folder = folder
    return server


def start_in_thread(upstream: str, out: str, host: str = "127.0.0.1", port: int = 0,
                    keep_credentials: bool = False) -> tuple[http.server.HTTPServer, str]:
    """Start a proxy on a daemon thread; returns (server, base URL). Call server.shutdown()."""
    server = make_server(upstream, out, host, port, keep_credentials)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    bound_host, bound_port = server.socket.getsockname()[:2]  # (= server_address, typed)
    return server, f"http://{bound_host}:{bound_port}"
