"""Read recorded model requests into pieces of text and files, each with its place.

The tripwire (`plimsoll_ci.tripwire.matching`) hands every piece to the one matching engine. A
piece is a string from a JSON body (its place is the JSON pointer), a multipart part (`part NAME`), a header
(`header NAME`), the request target, a base64 file decoded from a JSON body or a data URL, or the
name of a file or folder under the requests folder.

What is read, under a requests folder (or one file):
- files written by `plimsoll-ci record` (`NNNNNN.request.json` + `.request.body`, format
  `plimsoll-record/1`): target, headers, and the body parsed by its Content-Type (and
  Content-Encoding gzip / deflate). Only complete recordings are read: in a recorder's folder, a
  body without its request.json and a temporary file are what a failed or cut write left (never
  forwarded), and are noted, not read. Response files are not requests and are not read (their
  names are, and whether the upstream answered is kept for the report: `sent`);
- HAR files (`*.har`, or JSON with `log.entries`): each entry's URL, headers and postData (text
  parsed by its mimeType, or params with names, file names and values);
- JSON (`*.json`, or anything that parses as a JSON object or array) and JSON Lines (`*.jsonl`,
  `*.ndjson`): OpenAI chat / responses, Anthropic messages, Gemini generateContent and any other
  shape, walked whole: keys, strings and numbers as written;
- a multipart/form-data body (a file starting with a boundary line), and raw text / bytes;
- the name of every file and folder.

Base64 is decoded where a body says it is a file: a `data:...;base64,` URL, a string under a key
such as `data`, `file_data`, `b64_json` or beside a MIME type (`mimeType`, `mime_type`,
`media_type`), and any long string made only of base64 characters. The decoded bytes are scanned as
a file: by SHA-256 and by contents.
"""

from __future__ import annotations

import base64
import binascii
import email.parser
import email.utils
import hashlib
import json
import os
import re
import stat
import urllib.parse
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import cannot_read, read_bounded
from plimsoll_ci.shipscan.redact import pointer_escape
from plimsoll_ci.tripwire.formats import NUMBERED, RECORD_FORMAT, RECORDER_LOCK, UNFINISHED


class Piece(NamedTuple):
    """One thing to scan, and where it came from."""

    source: str  # the recorded file, relative to the requests folder, '/'-separated
    place: str  # JSON pointer, "part NAME", "header NAME", "target", "file name", "" (whole file)
    data: bytes  # what to scan; text is UTF-8
    kind: str  # "text" (a string), "file" (bytes: digest and contents), "name" (a file name)
    covered: bool = False  # its base64 was decoded here whole (the engine need not say it did not)


class Sent(NamedTuple):
    """A recorded request as the report groups it: retries of one request share `same`."""

    same: tuple[str, str, str]  # method, target, SHA-256 of the body
    files: tuple[str, str]  # its request.json and its body, relative to the requests folder


def upstream_answered(root: str, stem: str) -> bool | None:
    """Whether the upstream answered the recorded request `stem` (None: no response recorded)."""
    if os.path.isfile(root):
        root = os.path.dirname(root) or "."
    try:
        with open(os.path.join(root, stem + ".response.json"), "rb") as fh:
            doc = json.loads(fh.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != RECORD_FORMAT:
        return None
    answered = doc.get("upstream_answered")
    if isinstance(answered, bool):
        return answered
    return "unreachable" not in str(doc.get("error", ""))  # older recorders said it only there


class _Folder(NamedTuple):
    names: frozenset[str]
    recorder: bool  # written by `plimsoll-ci record`


class ReadLimits(NamedTuple):
    """Bounds on reading; a bound that is hit becomes a note, never a silent skip."""

    max_file_bytes: int = 256 * 1024 * 1024
    max_decoded_bytes: int = 64 * 1024 * 1024
    max_json_depth: int = 200


_FILE_KEYS = frozenset({"data", "file_data", "b64_json", "bytes", "image_base64", "audio_base64"})
_MIME_KEYS = ("mimeType", "mime_type", "media_type", "mediaType", "content_type")
_B64_RE = re.compile(rb"[A-Za-z0-9+/_-]+={0,2}")
_DATA_URL_RE = re.compile(r"data:([\w.+-]+/[\w.+-]+)?((?:;[\w.+-]+=[^;,]*)*);base64,", re.I)
_UNFINISHED_ENDS = (".request.body", ".tmp", ".part")  # what `_complete` may refuse
_GENERIC_B64_MIN = 128  # shorter strings are left to the engine's own one-layer base64 decode


def join_place(place: str, more: str) -> str:
    """A place inside a place: `/messages/0 > part file`, or either one alone."""
    if place and more:
        return f"{place} > {more}"
    return place or more


def _b64decode(text: str | bytes) -> bytes | None:
    if isinstance(text, str):
        if not text.isascii():
            return None
        text = text.encode("ascii")
    # line breaks are how base64 is wrapped; any other white space means it is text
    raw = text.replace(b"\r", b"").replace(b"\n", b"")
    if not raw or not _B64_RE.fullmatch(raw):
        return None
    altchars = b"-_" if (b"-" in raw or b"_" in raw) else None
    raw += b"=" * (-len(raw) % 4)
    try:
        return base64.b64decode(raw, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None


class _Num(str):
    """A JSON number kept exactly as it was written (so `31.50` stays `31.50`)."""


def _loads(data: bytes | str):
    return json.loads(data, parse_float=_Num, parse_int=_Num, parse_constant=_Num)


class RequestReader:
    """Turns a requests folder into pieces; notes collect what could not be read in full."""

    def __init__(self, limits: ReadLimits | None = None) -> None:
        self.limits = limits or ReadLimits()
        self.notes: list[str] = []
        self.files = 0
        self.bytes = 0
        self.sent: dict[str, Sent] = {}  # recorded request stem ("a/000001") -> how it was sent

    # ---- the folder -------------------------------------------------------------------------

    def read(self, root: str) -> Iterator[Piece]:
        """Every piece under `root` (a folder or one file), in a stable order."""
        folders, files = self.listing(root)
        yield from self.names(folders, files)
        yield from self.read_files(root, files)

    def listing(self, root: str) -> tuple[list[str], list[str]]:
        """(folders as `a/b/`, files as `a/b/c.json`) under `root`, relative and sorted."""
        if not os.path.exists(root):
            raise BadInput(f"--requests {root}: no such file or folder; "
                           "give the folder `plimsoll-ci record --out` wrote")
        if os.path.isfile(root):
            return [], [os.path.basename(root)]
        folders: list[str] = []
        files: list[str] = []
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
            rel_folder = "" if rel_folder == "." else rel_folder + "/"
            folders += [rel_folder + d + "/" for d in dirs]
            files += [rel_folder + f for f in sorted(names)]
        return folders, files

    def names(self, folders: list[str], files: list[str]) -> Iterator[Piece]:
        """The name of every folder and file (each piece is one name, not the whole path)."""
        for d in folders:
            yield Piece(d, "folder name", d.rstrip("/").rsplit("/", 1)[-1].encode(), "name")
        for f in files:
            yield Piece(f, "file name", f.rsplit("/", 1)[-1].encode(), "name")

    def read_files(self, root: str, files: list[str]) -> Iterator[Piece]:
        """The contents of `files` (relative to `root`, or `root` itself when it is a file)."""
        if os.path.isfile(root):
            root = os.path.dirname(root) or "."
        listed: dict[str, _Folder] = {}
        for rel in files:
            folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if folder not in listed:
                try:
                    names = frozenset(os.listdir(os.path.join(root, folder) or "."))
                except OSError:
                    names = frozenset()
                recorder = RECORDER_LOCK in names or any(
                    n.endswith(".request.json") and NUMBERED.fullmatch(n) for n in names)
                listed[folder] = _Folder(names, recorder)
            yield from self._read_file(root, rel, listed[folder])

    def _read_bytes(self, path: str, rel: str) -> bytes | None:
        try:
            st = os.lstat(path)
        except OSError as e:
            self.notes.append(f"{rel}: {cannot_read(e)}; only its name was checked")
            return None
        if stat.S_ISLNK(st.st_mode):  # never followed out of the folder given
            self.notes.append(f"{rel}: a symbolic link, not followed; only its name was checked")
            return None
        if not stat.S_ISREG(st.st_mode):
            self.notes.append(f"{rel}: not a regular file (a FIFO, device or socket is never "
                              "read); only its name was checked")
            return None
        if st.st_size > self.limits.max_file_bytes:
            self.notes.append(f"{rel}: {st.st_size} bytes is over the "
                              f"{self.limits.max_file_bytes}-byte read bound; only its name was "
                              "checked")
            return None
        try:  # (bounded again while reading: a file that grows, or is swapped for a link)
            data = read_bounded(path, self.limits.max_file_bytes, rel, follow=False)
        except BadInput as e:
            self.notes.append(f"{e}; only its name was checked")
            return None
        self.files += 1
        self.bytes += len(data)
        return data

    def _read_file(self, root: str, rel: str, folder: _Folder) -> Iterator[Piece]:
        path = os.path.join(root, rel)
        base = os.path.basename(rel)
        stem, _, tail = base.partition(".")
        if folder.recorder and (base[:1] == "." or base.endswith(_UNFINISHED_ENDS)) and \
                not self._complete(path, rel, base, folder.names):
            return
        # a recorder's body / response files are read through their request.json (or skipped)
        if tail in ("request.body", "response.body", "response.json") and \
                f"{stem}.request.json" in folder.names and self._is_record(
                    os.path.join(os.path.dirname(path), f"{stem}.request.json")):
            return
        data = self._read_bytes(path, rel)
        if data is None:
            return
        lower = base.lower()
        if lower.endswith(".request.json"):
            doc = self._json_or_none(data)
            if isinstance(doc, dict) and doc.get("format") == RECORD_FORMAT:
                yield from self._recorded(os.path.dirname(path), rel, doc)
                return
        if lower.endswith((".jsonl", ".ndjson")):
            yield from self._jsonl(rel, data)
            return
        stripped = data.lstrip()[:1]
        if lower.endswith((".json", ".har")) or stripped in (b"{", b"["):
            doc = self._json_or_none(data)
            if isinstance(doc, dict) and isinstance(doc.get("log"), dict) and \
                    isinstance(doc["log"].get("entries"), list):
                yield from self._har(rel, doc)
                return
            if doc is not None:
                yield from self._walk(rel, "", doc)
                return
            if lower.endswith((".json", ".har")):
                self.notes.append(f"{rel}: not valid JSON; read as raw text")
        if data.startswith(b"--"):
            boundary = data[2:data.find(b"\n")].rstrip(b"\r") if b"\n" in data else b""
            if boundary and len(boundary) <= 200 and b"\r\n--" + boundary in data:
                yield from self._multipart(rel, "", data, boundary)
                return
        yield Piece(rel, "", data, "file")

    def _complete(self, path: str, rel: str, base: str, names: frozenset[str]) -> bool:
        """False for what a recorder leaves of a write that failed or was cut (noted)."""
        if base == RECORDER_LOCK:
            try:
                return os.path.getsize(path) > 0  # the empty lock file is no request
            except OSError:
                return False
        if UNFINISHED.fullmatch(base):
            self.notes.append(f"{rel}: an unfinished write of the recorder (the request it "
                              "belongs to was never forwarded); not read")
            return False
        m = NUMBERED.fullmatch(base)
        if m and m.group(2, 3) == ("request", "body") and \
                f"{m.group(1)}.request.json" not in names:
            self.notes.append(f"{rel}: no {m.group(1)}.request.json beside it, so the recorder "
                              "never finished recording it and never forwarded it; not read")
            return False
        return True

    def _is_record(self, path: str) -> bool:
        try:
            with open(path, "rb") as fh:
                head = fh.read(200)
        except OSError:
            return False
        return RECORD_FORMAT.encode() in head

    def _json_or_none(self, data: bytes):
        try:
            return _loads(data)
        except (ValueError, UnicodeDecodeError):
            return None
        except RecursionError:
            return None

    # ---- formats ----------------------------------------------------------------------------

    def _recorded(self, folder: str, rel: str, doc: dict) -> Iterator[Piece]:
        """A `plimsoll-record/1` request: target, headers, and its body sidecar."""
        target = doc.get("target")
        if isinstance(target, str):
            yield Piece(rel, "target", target.encode(), "text")
        headers = doc.get("headers")
        if not isinstance(headers, list):
            headers = []
        ctype = cenc = ""
        for h in headers:
            if isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h):
                name, value = h
                yield Piece(rel, f"header {name}", f"{name}: {value}".encode(), "text")
                if name.lower() == "content-type":
                    ctype = value
                elif name.lower() == "content-encoding":
                    cenc = value
        body_name = doc.get("body")
        if not isinstance(body_name, str) or "/" in body_name or "\\" in body_name or \
                body_name in ("", ".", ".."):
            self.notes.append(f"{rel}: no usable \"body\" file name; only target and headers read")
            return
        body_rel = rel.rsplit("/", 1)[0] + "/" + body_name if "/" in rel else body_name
        data = self._read_bytes(os.path.join(folder, body_name), body_rel)
        if data is None:
            return
        self._note_sent(rel, body_rel, doc, data)
        yield from self.body(body_rel, "", data, ctype, cenc)

    def _note_sent(self, rel: str, body_rel: str, doc: dict, data: bytes) -> None:
        body_sha256 = doc.get("body_sha256")
        if not isinstance(body_sha256, str):
            body_sha256 = hashlib.sha256(data).hexdigest()
        same = (str(doc.get("method")), str(doc.get("target")), body_sha256)
        self.sent[rel[:-len(".request.json")]] = Sent(same, (rel, body_rel))

    def body(self, source: str, place: str, data: bytes, content_type: str = "",
             content_encoding: str = "") -> Iterator[Piece]:
        """A request body, parsed by its Content-Type (and Content-Encoding)."""
        enc = content_encoding.strip().lower()
        if enc and enc != "identity":
            decoded = self._decompress(data, enc, source)
            if decoded is None:
                yield Piece(source, place, data, "file")
                return
            data = decoded
        ctype = content_type.split(";", 1)[0].strip().lower()
        if ctype == "multipart/form-data":
            m = re.search(r'boundary="?([^";]+)"?', content_type, re.I)
            if m:
                yield from self._multipart(source, place, data, m.group(1).encode("latin-1"))
                return
        if ctype == "application/x-www-form-urlencoded":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
            for i, (k, v) in enumerate(urllib.parse.parse_qsl(text, keep_blank_values=True)):
                yield Piece(source, join_place(place, f"field {i} {k}"), f"{k}={v}".encode(),
                            "text")
            return
        if "json" in ctype or data.lstrip()[:1] in (b"{", b"["):
            doc = self._json_or_none(data)
            if doc is not None:
                yield from self._walk(source, place, doc)
                return
            if "json" in ctype:
                self.notes.append(f"{source}: Content-Type says JSON but the body does not parse; "
                                  "read as raw text")
        yield Piece(source, place, data, "file")

    def _decompress(self, data: bytes, enc: str, source: str) -> bytes | None:
        cap = self.limits.max_decoded_bytes
        try:
            if enc in ("gzip", "x-gzip"):
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif enc == "deflate":
                d = zlib.decompressobj()
            else:
                self.notes.append(f"{source}: Content-Encoding {enc} is not decoded; "
                                  "read as raw bytes")
                return None
            out = d.decompress(data, cap + 1)
        except zlib.error:
            self.notes.append(f"{source}: Content-Encoding {enc} does not decode; read as raw")
            return None
        if len(out) > cap:
            self.notes.append(f"{source}: decoded body is over the {cap}-byte bound; "
                              "read as raw bytes")
            return None
        return out

    def _jsonl(self, rel: str, data: bytes) -> Iterator[Piece]:
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            doc = self._json_or_none(line)
            if doc is None:
                yield Piece(rel, f"line {n}", line, "file")
            else:
                yield from self._walk(rel, f"line {n}", doc)

    def _har(self, rel: str, doc: dict) -> Iterator[Piece]:
        for i, entry in enumerate(doc["log"]["entries"]):
            req = entry.get("request") if isinstance(entry, dict) else None
            if not isinstance(req, dict):
                continue
            at = f"/log/entries/{i}/request"
            if isinstance(req.get("url"), str):
                yield Piece(rel, at + "/url", req["url"].encode(), "text")
            for j, h in enumerate(req.get("headers") or []):
                if isinstance(h, dict) and isinstance(h.get("value"), str):
                    yield Piece(rel, f"{at}/headers/{j}",
                                f"{h.get('name', '')}: {h['value']}".encode(), "text")
            post = req.get("postData")
            if not isinstance(post, dict):
                continue
            params = post.get("params")
            if isinstance(params, list) and params:
                for k, p in enumerate(params):
                    if not isinstance(p, dict):
                        continue
                    pat = f"{at}/postData/params/{k}"
                    if isinstance(p.get("name"), str):
                        yield Piece(rel, pat + "/name", p["name"].encode(), "text")
                    if isinstance(p.get("fileName"), str):
                        yield Piece(rel, pat + "/fileName", p["fileName"].encode(), "name")
                    if isinstance(p.get("value"), str):
                        yield from self.body(rel, pat + "/value", p["value"].encode(),
                                             str(p.get("contentType") or ""))
            text = post.get("text")
            if isinstance(text, str):
                raw = text.encode("utf-8", "surrogatepass")
                if str(post.get("encoding", "")).lower() == "base64":
                    raw = _b64decode(text) or raw
                yield from self.body(rel, at + "/postData/text", raw, str(post.get("mimeType", "")))

    def _multipart(self, source: str, place: str, data: bytes, boundary: bytes) -> Iterator[Piece]:
        delim = b"--" + boundary
        chunks = (b"\r\n" + data).split(b"\r\n" + delim)
        if len(chunks) < 2:
            self.notes.append(f"{source}: multipart boundary not found; read as raw bytes")
            yield Piece(source, place, data, "file")
            return
        for n, chunk in enumerate(chunks[1:], 1):
            if chunk.startswith(b"--"):
                break  # the closing delimiter
            head, sep, content = chunk.partition(b"\r\n\r\n")
            if not sep:
                continue
            msg = email.parser.HeaderParser().parsestr(head.decode("utf-8", "replace").lstrip())
            name = msg.get_param("name", header="content-disposition")
            name = email.utils.collapse_rfc2231_value(name) if name else f"#{n}"
            filename = msg.get_filename()
            at = join_place(place, f"part {name}")
            yield Piece(source, at + " name", str(name).encode(), "text")
            if filename:
                yield Piece(source, at + " filename", filename.encode(), "name")
            if msg.get("content-transfer-encoding", "").strip().lower() == "base64":
                content = _b64decode(content) or content
            yield from self.body(source, at, content, msg.get("content-type", ""))

    # ---- JSON -------------------------------------------------------------------------------

    def _walk(self, source: str, place: str, doc) -> Iterator[Piece]:
        """Keys, strings and numbers of a JSON document; places are `place > /json/pointer`."""
        # (pointer, node, the object holding it or None, depth)
        stack: list[tuple[str, Any, dict | None, int]] = [("", doc, None, 0)]
        while stack:
            ptr, node, parent, depth = stack.pop()
            at = join_place(place, ptr)
            if depth > self.limits.max_json_depth:
                self.notes.append(f"{source} {at}: JSON nested deeper than "
                                  f"{self.limits.max_json_depth}; the rest was not read")
                continue
            if isinstance(node, dict):
                items = list(node.items())
                for k, v in reversed(items):
                    stack.append((f"{ptr}/{pointer_escape(k)}", v, node, depth + 1))
                for k, _v in items:
                    yield Piece(source, join_place(place, f"{ptr}/{pointer_escape(k)} (key)"),
                                k.encode("utf-8", "surrogatepass"), "text")
            elif isinstance(node, list):
                for i in range(len(node) - 1, -1, -1):
                    stack.append((f"{ptr}/{i}", node[i], None, depth + 1))
            elif isinstance(node, _Num):
                yield Piece(source, at, str(node).encode(), "text")
            elif isinstance(node, str):
                yield from self._string(source, at, node, parent)

    def _string(self, source: str, at: str, s: str, parent: dict | None) -> Iterator[Piece]:
        raw = s.encode("utf-8", "surrogatepass")
        m = _DATA_URL_RE.match(s)
        if m:
            decoded = self._decode_b64_file(source, at, s[m.end():])
            if decoded is not None:
                yield Piece(source, f"{at} (base64 {m.group(1) or 'data'})", decoded, "file")
                return
        key = at.rsplit("/", 1)[-1]
        declared = key in _FILE_KEYS or (
            parent is not None and (parent.get("type") == "base64" or
                                    any(k in parent for k in _MIME_KEYS)) and key != "type"
            and key not in _MIME_KEYS and len(s) >= 16)
        covered = False
        if declared:
            decoded = self._decode_b64_file(source, at, s)
            if decoded is not None:
                mime = next((parent[k] for k in _MIME_KEYS if parent and isinstance(parent.get(k),
                             str)), "file")
                yield Piece(source, f"{at} (base64 {mime})", decoded, "file")
                if len(s) >= _GENERIC_B64_MIN:
                    return  # a real file; a short one may as well be a word, so read both
                covered = True
        decoded = None
        if not declared and len(s) >= _GENERIC_B64_MIN and " " not in s:
            decoded = self._decode_b64_file(source, at, s)
        if covered or decoded is not None:
            # the engine's note that a long base64 region was not decoded is moot: it was, here
            yield Piece(source, at, raw, "text", True)
        else:
            yield Piece(source, at, raw, "text")
        if decoded is not None:
            yield Piece(source, f"{at} (base64)", decoded, "file")

    def _decode_b64_file(self, source: str, at: str, text: str) -> bytes | None:
        if len(text) * 3 // 4 > self.limits.max_decoded_bytes:
            self.notes.append(f"{source} {at}: base64 file over the "
                              f"{self.limits.max_decoded_bytes}-byte bound; scanned as text")
            return None
        return _b64decode(text)

