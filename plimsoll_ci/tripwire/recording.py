"""A folder of recordings: what `plimsoll-ci record` writes, and how no recording is lost or mixed.

Format `plimsoll-record/1`, one set of files per request (NNNNNN counts up from 000001):

    NNNNNN.request.body   the request body, byte for byte as the client sent it (de-chunked)
    NNNNNN.request.json   {"format": "plimsoll-record/1", "seq", "time", "client", "method",
                           "target", "upstream", "headers": [[name, value], ...],
                           "body": "NNNNNN.request.body", "body_bytes", "body_sha256",
                           "redacted": [names of headers (and "?NAME" query parameters) whose
                                        values were replaced]}
    NNNNNN.response.body  the response body as the upstream sent it (after de-chunking)
    NNNNNN.response.json  {"format", "seq", "status", "reason", "headers", "body", "body_bytes",
                           "body_sha256", "streamed", "error", "upstream_answered"}

How the folder stays whole:
- One recorder per folder: a recorder holds an exclusive lock on `.plimsoll-record.lock` (an
  empty file) while it runs, and a second one refuses to start.
- Every file is written under a hidden temporary name (`.NAME.PID.N.tmp`), flushed to disk, then
  linked to its name: a name that is taken is never replaced (the next free number is used).
- `NNNNNN.request.json` is written after its body and before the request is forwarded, so it
  marks a complete recording. A write that fails removes what it wrote (no temporary file, no body
  without its request.json): a full disk is not kept full, and the tripwire never reads a request
  that was not forwarded.

Credentials are written as "[redacted]" unless `keep_credentials` is set: every header, and every
query parameter, whose name says key, token, secret, auth, password, credential, cookie or
signature (`Authorization`, `Proxy-Authorization`, `x-api-key`, `api-key`, `x-goog-api-key`,
`Ocp-Apim-Subscription-Key`, `Cookie`, `?key=`, ...). A recording is meant to be shared with
auditors; an API key is not. The bodies are altered in one way only: the values of those
credentials are scrubbed from the request body, the response body and the response headers
wherever they are reflected (plain, JSON-escaped, base64: `plimsoll_ci.scrub`), as an endpoint
or a gateway that echoes the `Authorization` header would otherwise write the key into them.
`body_sha256` is of the bytes written.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import itertools
import json
import os
import threading
import urllib.parse

from plimsoll_ci.errors import BadInput
from plimsoll_ci.scrub import Scrubber, streaming
from plimsoll_ci.timestamps import now_text
from plimsoll_ci.tripwire.formats import CREDENTIAL_REDACTED, NUMBERED, RECORD_FORMAT, RECORDER_LOCK

_CREDENTIAL_WORDS = ("key", "token", "secret", "auth", "password", "passwd", "credential",
                     "cookie", "signature")
_LINK_UNSUPPORTED = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


def is_credential(name: str) -> bool:
    """Whether a header or query parameter name says it carries a credential."""
    lower = name.lower()
    return any(w in lower for w in _CREDENTIAL_WORDS)


def redact_target(target: str) -> tuple[str, list[str]]:
    """The request target with credential query parameters replaced; (target, their names)."""
    path, sep, query = target.partition("?")
    if not sep:
        return target, []
    names, out = [], []
    for item in query.split("&"):
        name, eq, _value = item.partition("=")
        decoded = urllib.parse.unquote_plus(name)
        if eq and is_credential(decoded):
            out.append(f"{name}={urllib.parse.quote(CREDENTIAL_REDACTED)}")
            names.append(f"?{decoded}")
        else:
            out.append(item)
    return path + "?" + "&".join(out), names


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _json_bytes(doc: dict) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class RecordingFolder:
    """The recorder's `--out` folder: numbers requests and writes their files; thread-safe."""

    def __init__(self, out: str, upstream: str, keep_credentials: bool = False) -> None:
        self.out = out
        self.upstream = upstream
        self.keep_credentials = keep_credentials
        try:
            os.makedirs(out, exist_ok=True)
            self._lock_fd = os.open(os.path.join(out, RECORDER_LOCK),
                                    os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise BadInput(f"--out {out}: cannot make the folder or its lock file "
                           f"({e.strerror}); give a folder you can write") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise BadInput(f"--out {out}: another `plimsoll-ci record` is writing to this "
                           f"folder (it holds {RECORDER_LOCK}); give each recorder its own --out "
                           "folder") from None
        numbers = [int(m.group(1)) for n in os.listdir(out) if (m := NUMBERED.fullmatch(n))]
        self._next = max(numbers, default=0) + 1
        self._numbers = threading.Lock()
        self._temporaries = itertools.count()
        self._closed = False

    def close(self) -> None:
        """Release the folder's lock (another recorder may then write to it). Nothing more is
        written: an answer still arriving (a trickling upstream) is not recorded after the
        folder was closed, so a folder that was read, hashed or signed does not change."""
        self._closed = True
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _refuse_closed(self) -> None:
        if self._closed:
            raise OSError(errno.EBADF, "the recording folder was closed")

    def _path(self, name: str) -> str:
        return os.path.join(self.out, name)

    def _temporary(self, name: str) -> tuple[str, int]:
        self._refuse_closed()
        tmp = self._path(f".{name}.{os.getpid()}.{next(self._temporaries)}.tmp")
        return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)

    def _link(self, tmp: str, name: str) -> None:
        """Give a flushed temporary its name, never replacing a file (FileExistsError)."""
        self._refuse_closed()
        final = self._path(name)
        try:
            os.link(tmp, final)
        except FileExistsError:
            raise
        except OSError as e:
            if e.errno not in _LINK_UNSUPPORTED:
                raise
            # a file system without hard links: the folder's lock keeps other recorders out
            if os.path.lexists(final):
                raise FileExistsError(errno.EEXIST, "File exists", final) from None
            os.rename(tmp, final)

    def _publish(self, name: str, data: bytes) -> None:
        tmp, fd = self._temporary(name)
        try:
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._link(tmp, name)
        finally:
            _unlink(tmp)

    def scrubber(self, target: str, headers: list[tuple[str, str]]) -> Scrubber:
        """What scrubs the credentials a request carries (its credential headers' and query
        parameters' values) from what is recorded; scrubs nothing with `keep_credentials`."""
        if self.keep_credentials:
            return Scrubber(())
        values = [v for k, v in headers if is_credential(k)]
        query = target.partition("?")[2]
        values += [v for k, v in urllib.parse.parse_qsl(query) if is_credential(k)]
        return Scrubber(values)

    def _headers(self, headers: list[tuple[str, str]],
                 scrub: Scrubber | None = None) -> tuple[list[list[str]], list[str]]:
        out, redacted = [], []
        for name, value in headers:
            if not self.keep_credentials and is_credential(name):
                out.append([name, CREDENTIAL_REDACTED])
                redacted.append(name)
            else:
                out.append([name, scrub.text(value) if scrub else value])
        return out, redacted

    def recorded_target(self, target: str) -> str:
        """The target as it is written (and logged): credentials in its query redacted."""
        return target if self.keep_credentials else redact_target(target)[0]

    def write_request(self, client: str, method: str, target: str,
                      headers: list[tuple[str, str]], body: bytes) -> int:
        """Write a request's body, then its request.json (which marks it complete) -> its number.

        OSError when it cannot be written whole; then nothing of it is left in the folder.
        """
        scrub = self.scrubber(target, headers)
        body = scrub.bytes(body)
        while True:
            with self._numbers:
                seq = self._next
                self._next += 1
            try:
                self._publish(f"{seq:06d}.request.body", body)
                break
            except FileExistsError:
                continue  # written by someone else (an older recorder's leftover): next number
        recorded_headers, redacted = self._headers(headers, scrub)
        if not self.keep_credentials:
            target, names = redact_target(target)
            redacted += names
        doc = {
            "format": RECORD_FORMAT,
            "seq": seq,
            "time": now_text(),
            "client": client,
            "method": method,
            "target": target,
            "upstream": self.upstream,
            "headers": recorded_headers,
            "body": f"{seq:06d}.request.body",
            "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "redacted": redacted,
        }
        try:
            self._publish(f"{seq:06d}.request.json", _json_bytes(doc))
        except OSError:
            _unlink(self._path(f"{seq:06d}.request.body"))
            raise
        return seq

    def response(self, seq: int, scrub: Scrubber | None = None) -> ResponseWriter:
        """A writer for request `seq`'s response body (as it arrives) and its response.json;
        `scrub` (the request's `scrubber`) is applied to both."""
        return ResponseWriter(self, seq, scrub)


class ResponseWriter:
    """A response body written as it arrives, then published with its response.json.

    `write` raises OSError at once when the disk refuses a piece, so a stream can be ended at
    that piece; `finish` and `discard` leave no temporary and no body without its response.json.
    """

    def __init__(self, folder: RecordingFolder, seq: int, scrub: Scrubber | None = None) -> None:
        self.folder = folder
        self.seq = seq
        self.name = f"{seq:06d}.response.body"
        self.tmp, self.fd = folder._temporary(self.name)
        self.sha = hashlib.sha256()
        self.size = 0
        self.scrub = scrub or Scrubber(())
        self._feed = streaming(self.scrub, self._append)

    def _append(self, data: bytes) -> None:
        _write_all(self.fd, data)
        self.sha.update(data)
        self.size += len(data)

    def write(self, data: bytes) -> None:
        """Append a piece of the body, scrubbed (OSError when it cannot be written)."""
        self._feed(data)

    def finish(self, status: int, reason: str, headers: list[tuple[str, str]], *,
               streamed: bool, error: str = "", answered: bool = True) -> None:
        """Publish the body and write response.json; OSError when either cannot be written."""
        folder = self.folder
        try:
            try:
                self._feed(None)  # what the scrubber held back
                os.fsync(self.fd)
            finally:
                self._close()
            folder._link(self.tmp, self.name)
        finally:
            _unlink(self.tmp)
        recorded_headers, _ = folder._headers(headers, self.scrub)
        doc = {
            "format": RECORD_FORMAT,
            "seq": self.seq,
            "status": status,
            "reason": reason,
            "headers": recorded_headers,
            "body": self.name,
            "body_bytes": self.size,
            "body_sha256": self.sha.hexdigest(),
            "streamed": streamed,
            "error": error,
            "upstream_answered": answered,
        }
        try:
            folder._publish(f"{self.seq:06d}.response.json", _json_bytes(doc))
        except OSError:
            _unlink(folder._path(self.name))
            raise

    def discard(self) -> None:
        """Drop what was written (the temporary file)."""
        self._close()
        _unlink(self.tmp)

    def _close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)
