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
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

from plimsoll_ci.match.ascii import AMPERSAND, BACKSLASH, DEL, EQUALS, PERCENT, SEVEN, SPACE, TWO
from plimsoll_ci.match.extract import C_B64, C_DIGIT, C_HEX, C_LOWER, C_UPPER, byte_classes
from plimsoll_ci.match.workspace import work_array

# Headers of the containers undone here (the first bytes of a stream or archive).
GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZLIB_DEFLATE = 0x78  # the CMF byte of a zlib stream: deflate with a 32 KiB window
ZLIB_LEVELS = (0x01, 0x5E, 0x9C, 0xDA)  # its FLG byte at each compression level
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end
TAR_MAGIC, TAR_MAGIC_AT = b"ustar", 257  # in the first 512-byte header block


class Bounds(NamedTuple):
    max_decompressed: int = 64 * 1024 * 1024  # bytes out of one stream or member
    max_members: int = 1000  # archive members read per archive
    max_region: int = 4 * 1024 * 1024  # bytes of one encoded text region
    max_regions: int = 10000  # encoded regions decoded per buffer
    max_line: int = 1024 * 1024  # bytes of one line decoded for escapes and entities


class Layer(NamedTuple):
    chain: str  # e.g. "zip member data/a.json", "base64"
    offset: int  # where the layer starts in its parent (for places in text)
    data: bytes
    name: str | None = None  # a member's name, scanned like a file name


class Decoded(NamedTuple):
    layers: list[Layer]
    notes: list[str]


# --- encoded text regions ---------------------------------------------------------------------

# Base64: maximal runs of the alphabet (standard or URL-safe) of 6+ characters, decoded when they
# end in padding ("MzEuNQ==" is `31.5`) or, unpadded, when 12+ characters mix both cases
# (`_looks_base64`): identifiers in code are mostly shorter, unpadded, or of one case.
_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{6,}={0,2}")
_HEX_RUN = re.compile(rb"[0-9A-Fa-f]{8,}")
# Escapes and entities: every line that holds one is decoded as a whole.
_ESC_HIT = re.compile(rb"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{1,10};")
_PCT = re.compile(rb"%[0-9A-Fa-f]{2}")
_UESC = re.compile(rb"\\u([0-9A-Fa-f]{4})|\\x([0-9A-Fa-f]{2})")
_ENT = re.compile(rb"&#?[A-Za-z0-9]{1,10};")
_DIGITS = re.compile(rb"[0-9]")
_SMALL = 64 * 1024  # as extract.SMALL: small inputs never import numpy
_PRINTABLE = bytes(range(SPACE, DEL)) + b"\t\n\r"


def _b64(tok: bytes) -> bytes | None:
    t = tok.rstrip(b"=")
    if len(t) % 4 == 1:
        return None
    pad = b"=" * (-len(t) % 4)
    try:
        if b"-" in t or b"_" in t:
            if b"+" in t or b"/" in t:
                return None
            return base64.urlsafe_b64decode(t + pad)
        return base64.b64decode(t + pad, validate=True)
    except (binascii.Error, ValueError):
        return None


def _looks_base64(tok: bytes) -> bool:
    # Plain words and numbers decode to noise; a base64 run mixes cases or digits with letters.
    if tok.endswith(b"="):
        return True
    # Unpadded: 12+ characters with both cases (base64 of 12+ characters almost always has both;
    # snake_case identifiers and numbers never do).
    return len(tok) >= 12 and tok != tok.lower() and tok != tok.upper()


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


def _escape_kind(tok: bytes) -> str:
    kinds = []
    if _PCT.search(tok):
        kinds.append("percent-encoding")
    if b"\\u" in tok or b"\\x" in tok:
        kinds.append("escapes")
    if _ENT.search(tok):
        kinds.append("html-entities")
    return "+".join(kinds) or "escapes"


def _runs(buf: bytes, rx: re.Pattern[bytes], pad: bool,
          classes: object | None) -> list[tuple[int, int]]:
    """Maximal runs of a byte class (base64: 6+ bytes and up to two `=`; hex: 8+ bytes)."""
    if classes is None:
        return [(m.start(), m.end()) for m in rx.finditer(buf)]
    import numpy as np

    n = len(buf)
    cls = classes.padded[1:]  # type: ignore[attr-defined]  # n + 1: the last 0 ends every run
    k = 6 if pad else 8
    # Erode the mask so only runs of k+ bytes remain: e[i] is true when m[i:i+k] all are. Short
    # runs (most words) then never reach the slower run bookkeeping below. The work arrays keep
    # a 0 before the mask, so every run starts and ends inside them.
    bufs = (work_array("e0", n + 3, np.uint8), work_array("e1", n + 3, np.uint8))
    cur = bufs[0]
    cur[0] = 0
    np.bitwise_and(cls, C_B64 if pad else C_HEX, out=cur[1 : n + 2])
    ln, width, flip = n + 1, 1, 1
    while width * 2 <= k:
        nxt = bufs[flip]
        nxt[0] = 0
        np.bitwise_and(cur[1 : 1 + ln - width], cur[1 + width : 1 + ln], out=nxt[1 : 1 + ln - width])
        cur, ln, flip, width = nxt, ln - width, 1 - flip, width * 2
    if width < k:
        w = k - width
        nxt = bufs[flip]
        nxt[0] = 0
        np.bitwise_and(cur[1 : 1 + ln - w], cur[1 + w : 1 + ln], out=nxt[1 : 1 + ln - w])
        cur, ln = nxt, ln - w
    cur[1 + ln] = 0
    d = work_array("d", ln + 1, bool)
    np.not_equal(cur[1 : ln + 2], cur[: ln + 1], out=d)
    t = np.flatnonzero(d)
    starts, ends = t[0::2], t[1::2] + (k - 1)
    lens = ends - starts
    if not pad:
        keep = lens % 2 == 0
        starts, ends, lens = starts[keep], ends[keep], lens[keep]
    if not len(starts):
        return []
    a = np.frombuffer(buf, dtype=np.uint8)
    if pad:  # base64: runs that end in padding, or long runs that mix cases or letters and digits
        idx = np.empty(2 * len(starts), dtype=np.int64)
        idx[0::2], idx[1::2] = starts, ends
        bits = np.bitwise_or.reduceat(cls, idx)[0::2]
        both = C_UPPER | C_LOWER  # base64 of 12+ characters almost always has both cases
        mixed = (bits & both) == both
        padded = ends < n
        padded[padded] = a[ends[padded]] == EQUALS
        keep = ((lens >= 6) & padded) | ((lens >= 12) & mixed)
    else:  # hex: even runs whose high nibbles (every other byte) are mostly '2'..'7'
        # The runs' bytes gathered into one array (hex runs cover a small part of a buffer):
        # their class bits, and their high-nibble bytes (even offsets: every run is even).
        off = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        pos = np.arange(int(off[-1]), dtype=np.int64)
        pos += np.repeat(starts - off[:-1], lens)
        bits = np.bitwise_or.reduceat(cls[pos], off[:-1])
        digits_only = (bits & (C_UPPER | C_LOWER | C_DIGIT)) == C_DIGIT  # no letters
        high = a[pos[0::2]]
        high -= TWO
        bad = (high > SEVEN - TWO).view(np.uint8)
        high_bad = np.add.reduceat(bad, off[:-1] // 2, dtype=np.int64)
        keep = ~digits_only | (lens >= 16)  # short digit strings are ids and numbers
        # digits only: every high nibble must be '2'..'7' (hex-encoded digits are "3x3x...")
        keep &= np.where(digits_only, high_bad == 0, high_bad * 5 <= lens // 2)
    out = []
    for a0, b in zip(starts[keep].tolist(), ends[keep].tolist(), strict=True):
        if pad and buf[b : b + 1] == b"=":
            b += 2 if buf[b + 1 : b + 2] == b"=" else 1
        out.append((a0, b))
    return out


def _esc_hits(buf: bytes):  # noqa: ANN202
    """Escape sequences and entities: `re` from each `%`, `\\` and `&` (numpy finds them)."""
    if len(buf) < _SMALL:
        yield from _ESC_HIT.finditer(buf)
        return
    import numpy as np

    a8 = np.frombuffer(buf, dtype=np.uint8)
    pos = np.flatnonzero((a8 == PERCENT) | (a8 == BACKSLASH) | (a8 == AMPERSAND))
    for p in pos.tolist():
        m = _ESC_HIT.match(buf, p)
        if m is not None:
            yield m


def _high_bad(tok: bytes) -> int:
    """High nibbles outside '2'..'7': hex-encoded text has almost none."""
    return len(tok[0::2].translate(None, b"234567"))


def text_regions(buf: bytes, bounds: Bounds, classes: object | None = None) -> Decoded:
    """Encoded regions of a text buffer, each decoded once: base64, hex, escapes, entities.

    `classes`: optionally `extract.byte_classes(buf)`, shared with `extract.find_values`.
    """
    if len(buf) < _SMALL:
        return _text_regions(buf, bounds, None)
    if classes is not None:
        return _text_regions(buf, bounds, classes)
    classes = byte_classes(buf)
    try:
        return _text_regions(buf, bounds, classes)
    finally:
        classes.release()


def _text_regions(buf: bytes, bounds: Bounds, classes: object | None) -> Decoded:
    layers: list[Layer] = []
    notes: list[str] = []

    def add(name: str, start: int, tok: bytes, data: bytes | None) -> bool:
        if not data:
            return True
        if len(layers) >= bounds.max_regions:
            notes.append(f"more than {bounds.max_regions} encoded regions: the rest not decoded")
            return False
        layers.append(Layer(name, start, data))
        return True

    def too_long(name: str, start: int, n: int) -> bool:
        if n <= bounds.max_region:
            return False
        notes.append(f"{name} region at byte {start} is {n} bytes, over the "
                     f"{bounds.max_region}-byte bound: not decoded")
        return True

    for a, b in _runs(buf, _B64_RUN, True, classes):
        tok = buf[a:b]
        if not _looks_base64(tok) or too_long("base64", a, b - a):
            continue
        if not add("base64", a, tok, _b64(tok)):
            return Decoded(layers, notes)
    for a, b in _runs(buf, _HEX_RUN, False, classes):
        tok = buf[a:b]
        bad = _high_bad(tok)
        if (b - a) % 2 or bad * 5 > (b - a) // 2 or too_long("hex", a, b - a):
            continue
        if tok.isdigit() and (b - a < 16 or bad):
            continue  # digit strings are ids and numbers unless they read as hex-encoded text
        data = bytes.fromhex(buf[a:b].decode("ascii"))
        if len(data.translate(None, _PRINTABLE)) * 5 > len(data):
            continue  # not hex-encoded text (ids, hashes, digit strings): nothing to find in it
        if not add("hex", a, buf[a:b], data):
            return Decoded(layers, notes)
    if b"%" in buf or b"\\" in buf or b"&" in buf:
        line_end = -1
        for m in _esc_hits(buf):
            if m.start() < line_end:
                continue  # this line was decoded already (keeps a long line linear)
            ls = buf.rfind(b"\n", 0, m.start()) + 1
            le = buf.find(b"\n", m.start())
            le = len(buf) if le < 0 else le
            line_end = le
            if le - ls > bounds.max_line:
                notes.append(f"line with escapes at byte {m.start()} is {le - ls} bytes, over the "
                             f"{bounds.max_line}-byte line bound: not decoded")
                continue
            line = buf[ls:le]
            data = _unescape(line)
            if data != line and not add(_escape_kind(line), m.start(), line, data):
                return Decoded(layers, notes)
    return Decoded(layers, notes)


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
    if data[:2] == GZIP_MAGIC:
        return "gzip"
    if data[:3] == BZ2_MAGIC:
        return "bz2"
    if data[:6] == XZ_MAGIC:
        return "xz"
    if len(data) >= 2 and data[0] == ZLIB_DEFLATE and data[1] in ZLIB_LEVELS \
            and (data[0] * 256 + data[1]) % 31 == 0:  # the header's own check (RFC 1950)
        return "zlib"
    return None


def is_container(data: bytes) -> bool:
    """Whether `data` starts like a compression stream, a zip or a tar (`containers` opens it)."""
    return stream_kind(data) is not None or data[:4] in ZIP_MAGICS or _is_tar(data)


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
    if data[:4] in ZIP_MAGICS:
        return _zip_members(data, bounds)
    if _is_tar(data):
        return _tar_members(data, bounds, prefix="")
    return Decoded([], [])


def _is_tar(data: bytes) -> bool:
    return len(data) >= 512 and data[TAR_MAGIC_AT:TAR_MAGIC_AT + len(TAR_MAGIC)] == TAR_MAGIC


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
