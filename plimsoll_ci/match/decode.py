"""One layer of disguise, undone: encoded regions in text, compression streams, archive members.

Every decoder is bounded by the caller's `Bounds` (sizes and counts); a bound that is hit is
returned as a note, never skipped in silence. Deeper nesting (base64 inside base64, an archive in
an archive member) is out of scope, except that a compression stream around a tar (`.tar.gz`) and a
text encoding inside an archive member are each still one layer of disguise on the content.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import html
import io
import lzma
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import unquote_to_bytes


class Bounds(NamedTuple):
    max_decompressed: int = 64 * 1024 * 1024  # bytes out of one stream or member
    max_members: int = 1000  # archive members read per archive
    max_region: int = 4 * 1024 * 1024  # bytes of one encoded text region
    max_regions: int = 10000  # encoded regions decoded per buffer


class Layer(NamedTuple):
    chain: str  # e.g. "zip member data/a.json", "base64"
    offset: int  # where the layer starts in its parent (for places in text)
    data: bytes
    name: str | None = None  # a member's name, scanned like a file name


class Decoded(NamedTuple):
    layers: list[Layer]
    notes: list[str]


# --- encoded text regions ---------------------------------------------------------------------

_B64 = re.compile(rb"[A-Za-z0-9+/]{8,}={0,2}|[A-Za-z0-9_-]{8,}={0,2}")
_HEX = re.compile(rb"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){4,}(?![0-9A-Fa-f])")
_ESCAPED = re.compile(
    rb"[^\s\"'<>`]*(?:%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{1,10};)"
    rb"(?:[^\"'<>`\n]*(?:%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{1,10};))*"
    rb"[^\s\"'<>`]*"
)
_PCT = re.compile(rb"%[0-9A-Fa-f]{2}")
_UESC = re.compile(rb"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})")
_ENT = re.compile(rb"&#?[A-Za-z0-9]{1,10};")


def _b64(tok: bytes) -> bytes | None:
    t = tok.rstrip(b"=")
    if len(t) % 4 == 1:
        return None
    pad = b"=" * (-len(t) % 4)
    try:
        if b"-" in t or b"_" in t:
            return base64.urlsafe_b64decode(t + pad)
        return base64.b64decode(t + pad, validate=True)
    except (binascii.Error, ValueError):
        return None


def _looks_base64(tok: bytes) -> bool:
    # Plain words and numbers decode to noise; a base64 run mixes cases or digits with letters.
    has_upper = any(65 <= c <= 90 for c in tok)
    has_lower = any(97 <= c <= 122 for c in tok)
    has_digit = any(48 <= c <= 57 for c in tok)
    return (has_upper and has_lower) or (has_digit and (has_upper or has_lower)) or tok.endswith(b"=")


def _unescape(region: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        cp = int(m.group(1) or m.group(2), 16)
        return chr(cp).encode("utf-8", "surrogatepass")

    out = _UESC.sub(one, region)
    if _PCT.search(out):
        out = unquote_to_bytes(out)
    if _ENT.search(out):
        out = html.unescape(out.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
    return out


def text_regions(buf: bytes, bounds: Bounds) -> Decoded:
    """Encoded regions of a text buffer, each decoded once: base64, hex, escapes, entities."""
    layers: list[Layer] = []
    notes: list[str] = []
    count = 0
    for name, rx in (("base64", _B64), ("hex", _HEX), ("escapes", _ESCAPED)):
        if name == "escapes" and not (b"%" in buf or b"\\" in buf or b"&" in buf):
            continue
        for m in rx.finditer(buf):
            tok = m.group()
            if len(tok) > bounds.max_region:
                notes.append(f"{name} region at byte {m.start()} is {len(tok)} bytes, over the "
                             f"{bounds.max_region}-byte bound: not decoded")
                continue
            if name == "base64":
                if not _looks_base64(tok):
                    continue
                data = _b64(tok)
            elif name == "hex":
                try:
                    data = bytes.fromhex(tok.decode("ascii"))
                except ValueError:
                    data = None
            else:
                data = _unescape(tok)
                if data == tok:
                    data = None
            if not data:
                continue
            count += 1
            if count > bounds.max_regions:
                notes.append(f"more than {bounds.max_regions} encoded regions: the rest not decoded")
                return Decoded(layers, notes)
            chain = {"escapes": "escapes"}.get(name, name)
            if name == "escapes":
                chain = _escape_kind(tok)
            layers.append(Layer(chain, m.start(), data))
    return Decoded(layers, notes)


def _escape_kind(tok: bytes) -> str:
    kinds = []
    if _PCT.search(tok):
        kinds.append("percent-encoding")
    if b"\\u" in tok or b"\\x" in tok:
        kinds.append("escapes")
    if _ENT.search(tok):
        kinds.append("html-entities")
    return "+".join(kinds) or "escapes"


# --- compression streams and archives ---------------------------------------------------------


def _bounded_stream(decomp: object, data: bytes, limit: int) -> tuple[bytes, bool]:
    out = decomp.decompress(data, limit + 1)  # type: ignore[attr-defined]
    return out[:limit], len(out) > limit


def _decompress(kind: str, data: bytes, limit: int) -> tuple[bytes, bool]:
    if kind == "gzip":
        return _bounded_stream(zlib.decompressobj(16 + zlib.MAX_WBITS), data, limit)
    if kind == "zlib":
        return _bounded_stream(zlib.decompressobj(), data, limit)
    if kind == "bz2":
        return _bounded_stream(bz2.BZ2Decompressor(), data, limit)
    return _bounded_stream(lzma.LZMADecompressor(), data, limit)


def stream_kind(data: bytes) -> str | None:
    """The compression stream whose header `data` starts with, if any."""
    if data[:2] == b"\x1f\x8b":
        return "gzip"
    if data[:3] == b"BZh":
        return "bz2"
    if data[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if len(data) >= 2 and data[0] == 0x78 and data[1] in (0x01, 0x5E, 0x9C, 0xDA) \
            and (data[0] * 256 + data[1]) % 31 == 0:
        return "zlib"
    return None


def containers(data: bytes, bounds: Bounds) -> Decoded:
    """Members of a zip or tar, or the content of a compression stream (a tar inside expands)."""
    notes: list[str] = []
    kind = stream_kind(data)
    if kind is not None:
        try:
            out, cut = _decompress(kind, data, bounds.max_decompressed)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as e:
            return Decoded([], [f"{kind} stream does not decompress ({type(e).__name__})"])
        if cut:
            notes.append(f"{kind} stream decompresses past the {bounds.max_decompressed}-byte "
                         "bound: scanned up to the bound")
        if _is_tar(out):
            inner = _tar_members(out, bounds, prefix=f"{kind} > ")
            return Decoded(inner.layers, notes + inner.notes)
        return Decoded([Layer(kind, 0, out)], notes)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _zip_members(data, bounds)
    if _is_tar(data):
        return _tar_members(data, bounds, prefix="")
    return Decoded([], [])


def _is_tar(data: bytes) -> bool:
    return len(data) >= 512 and data[257:262] == b"ustar"


def _zip_members(data: bytes, bounds: Bounds) -> Decoded:
    layers: list[Layer] = []
    notes: list[str] = []
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        return Decoded([], [f"zip archive does not open ({type(e).__name__})"])
    if len(infos) > bounds.max_members:
        notes.append(f"zip archive has {len(infos)} members, over the {bounds.max_members}-member "
                     f"bound: the first {bounds.max_members} scanned")
    total = 0
    for info in infos[: bounds.max_members]:
        name = info.filename
        if info.is_dir():
            layers.append(Layer(f"zip member {name}", 0, b"", name))
            continue
        try:
            with zf.open(info) as fh:
                body = fh.read(bounds.max_decompressed + 1)
        except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError, EOFError,
                zlib.error, ValueError) as e:
            notes.append(f"zip member {name} does not read ({type(e).__name__})")
            layers.append(Layer(f"zip member {name}", 0, b"", name))
            continue
        if len(body) > bounds.max_decompressed:
            notes.append(f"zip member {name} decompresses past the {bounds.max_decompressed}-byte "
                         "bound: scanned up to the bound")
            body = body[: bounds.max_decompressed]
        total += len(body)
        layers.append(Layer(f"zip member {name}", 0, body, name))
        if total > bounds.max_decompressed * 4:
            notes.append("zip archive decompresses past its total bound: the rest not scanned")
            break
    return Decoded(layers, notes)


def _tar_members(data: bytes, bounds: Bounds, prefix: str) -> Decoded:
    layers: list[Layer] = []
    notes: list[str] = []
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except (tarfile.TarError, OSError, ValueError) as e:
        return Decoded([], [f"tar archive does not open ({type(e).__name__})"])
    n = 0
    try:
        for member in tf:
            n += 1
            if n > bounds.max_members:
                notes.append(f"tar archive has more than {bounds.max_members} members: "
                             "the rest not scanned")
                break
            chain = f"{prefix}tar member {member.name}"
            if not member.isfile():
                layers.append(Layer(chain, 0, b"", member.name))
                continue
            fh = tf.extractfile(member)
            body = fh.read(bounds.max_decompressed) if fh is not None else b""
            if member.size > bounds.max_decompressed:
                notes.append(f"tar member {member.name} is over the {bounds.max_decompressed}-byte "
                             "bound: scanned up to the bound")
            layers.append(Layer(chain, 0, body, member.name))
    except (tarfile.TarError, OSError, ValueError, EOFError) as e:
        notes.append(f"tar archive is damaged after {n} members ({type(e).__name__})")
    return Decoded(layers, notes)
