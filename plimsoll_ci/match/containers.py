"""Compression streams and archives held in memory, opened one member at a time.

A member comes out a piece at a time, within the bounds (bytes out of one stream or member,
members per archive, bytes out of a whole zip), so no more than one member's piece is out of a
container at once; a bound that is hit, or damage, is a note. Nothing here opens a file: the
container's bytes are given, and zipfile and tarfile read them through a view.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from plimsoll_ci.match.decode import Bounds

# Headers of the containers undone here (the first bytes of a stream or archive).
GZIP_MAGIC = b"\x1f\x8b"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
ZLIB_DEFLATE = 0x78  # the CMF byte of a zlib stream: deflate with a 32 KiB window
ZLIB_LEVELS = (0x01, 0x5E, 0x9C, 0xDA)  # its FLG byte at each compression level
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's end
TAR_MAGIC, TAR_MAGIC_AT = b"ustar", 257  # in the first 512-byte header block




def _read_errors() -> tuple[type[BaseException], ...]:
    """Errors a damaged stream or archive raises while it is read. (The archive modules are
    imported when an archive is met: a commit of source files never pays their import.)"""
    import lzma
    import tarfile
    import zipfile

    return (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError, RuntimeError,
            NotImplementedError, zipfile.BadZipFile, tarfile.TarError)

_FEED = 64 * 1024  # compressed bytes handed to a decompressor at a time


class _Inflate:
    """The output of a compression stream held in memory, `read` a piece at a time."""

    def __init__(self, kind: str, data: bytes | bytearray) -> None:
        self.kind, self.data, self.pos, self.eof = kind, data, 0, False
        self.d: Any  # zlib's, bz2's or lzma's decompressor: the three share no base type
        if kind == "gzip":
            self.d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif kind == "zlib":
            self.d = zlib.decompressobj()
        elif kind == "bz2":
            import bz2

            self.d = bz2.BZ2Decompressor()
        else:
            import lzma

            self.d = lzma.LZMADecompressor()

    def _input(self) -> bytes | bytearray:
        chunk = self.data[self.pos : self.pos + _FEED]
        self.pos += len(chunk)
        return chunk

    def read(self, n: int) -> bytes:
        out: list[bytes] = []
        got = 0
        while got < n and not self.eof:
            if self.kind in ("gzip", "zlib"):
                inp = self.d.unconsumed_tail or self._input()
                chunk = self.d.decompress(inp, n - got)
                if not chunk and not inp:
                    chunk, self.eof = self.d.flush(), True
            else:
                inp = self._input() if self.d.needs_input else b""
                if self.d.needs_input and not inp:
                    self.eof = True  # the stream is cut short: what came out is scanned
                    break
                chunk = self.d.decompress(inp, n - got)
                if not chunk and not inp and not self.d.eof:
                    self.eof = True  # (nothing more will come out)
            if self.d.eof:
                self.eof = True
            out.append(chunk)
            got += len(chunk)
        return b"".join(out)


class _Bounded:
    """At most `limit` bytes of `read`, a piece at a time; going past the bound, or an error while
    reading, is noted and ends the content (what was read before is scanned)."""

    def __init__(self, read: Callable[[int], bytes], limit: int, notes: list[str],
                 over: str, broken: str) -> None:
        self.src, self.limit, self.notes, self.over, self.broken = read, limit, notes, over, broken
        self.count = 0
        self.done = False

    def __call__(self, n: int) -> bytes:
        if self.done or n <= 0:
            return b""
        try:
            chunk = self.src(min(n, self.limit - self.count + 1))  # a byte past: is there more?
        except _read_errors() as e:
            self.notes.append(f"{self.broken} ({type(e).__name__})")
            self.done = True
            return b""
        if not chunk:
            self.done = True
        elif self.count + len(chunk) > self.limit:
            chunk = chunk[: self.limit - self.count]
            self.notes.append(self.over)
            self.done = True
        self.count += len(chunk)
        return chunk


class _Replay(io.RawIOBase):
    """A readable stream of `head` and then the rest of `read` (for tarfile's stream mode)."""

    def __init__(self, head: bytes, read: Callable[[int], bytes]) -> None:
        self.head, self.src = head, read

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001
        if self.head:
            n = min(len(b), len(self.head))
            b[:n], self.head = self.head[:n], self.head[n:]
            return n
        chunk = self.src(len(b))
        b[: len(chunk)] = chunk
        return len(chunk)


class _MemoryFile(io.RawIOBase):
    """A seekable file over bytes in memory, without a copy of them (zipfile and tarfile read
    archives through it)."""

    def __init__(self, data: bytes | bytearray) -> None:
        self.view = memoryview(data)
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001
        chunk = self.view[self.pos : self.pos + len(b)]
        b[: len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: len(self.view)}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos


class Member(NamedTuple):
    """One content inside a container: an archive member, or a compression stream's output.

    `read(n)` gives its next bytes (b"" at the end), within the bounds; None when it has nothing
    to read (a folder). Read a member to its end, or leave it, before asking for the next one.
    """

    chain: str  # "zip member data/a.json", "gzip", "gzip > tar member d/a.txt"
    name: str | None  # a member's name, scanned like a file name (None: a stream's content)
    read: Callable[[int], bytes] | None


def stream_kind(data: bytes | bytearray) -> str | None:
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
    """Whether `data` (a content's first bytes) starts like a compression stream, a zip or a tar
    (`Container` opens it)."""
    return stream_kind(data) is not None or data[:4] in ZIP_MAGICS or _is_tar(data)


def _is_tar(data: bytes | bytearray) -> bool:
    return len(data) >= 512 and data[TAR_MAGIC_AT:TAR_MAGIC_AT + len(TAR_MAGIC)] == TAR_MAGIC


class Container:
    """A compression stream, zip or tar held in memory, opened one member at a time, so no more
    than one member's piece is ever out of it at once. Notes (bounds hit, damage) gather in
    `notes` as the members are read."""

    def __init__(self, data: bytes | bytearray, bounds: Bounds) -> None:
        self.data, self.bounds = data, bounds
        self.notes: list[str] = []

    def members(self) -> Iterator[Member]:
        """The members, in archive order (a compression stream has one; a tar inside expands)."""
        kind = stream_kind(self.data)
        if kind is not None:
            yield from self._stream(kind)
        elif self.data[:4] in ZIP_MAGICS:
            yield from self._zip()
        elif _is_tar(self.data):
            yield from self._tar(_MemoryFile(self.data), "r:", "")

    def _stream(self, kind: str) -> Iterator[Member]:
        limit = self.bounds.max_decompressed
        read = _Bounded(_Inflate(kind, self.data).read, limit, self.notes,
                        f"{kind} stream decompresses past the {limit}-byte bound: scanned up to "
                        "the bound", f"{kind} stream does not decompress")
        head = b""
        while len(head) < 512:  # a tar's first header block tells a tar
            chunk = read(512 - len(head))
            if not chunk:
                break
            head += chunk
        if _is_tar(head):
            yield from self._tar(_Replay(head, read), "r|", f"{kind} > ")
            return
        replay = _Replay(head, read)

        yield Member(kind, None, replay.read)

    def _zip(self) -> Iterator[Member]:
        import zipfile

        b = self.bounds
        try:
            zf = zipfile.ZipFile(_MemoryFile(self.data))
            infos = zf.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            self.notes.append(f"zip archive does not open ({type(e).__name__})")
            return
        if len(infos) > b.max_members:
            self.notes.append(f"zip archive has {len(infos)} members, over the {b.max_members}-"
                              f"member bound: the first {b.max_members} scanned")
        total = 0
        for info in infos[: b.max_members]:
            name = info.filename
            if info.is_dir():
                yield Member(f"zip member {name}", name, None)
                continue
            try:
                fh = zf.open(info)
            except _read_errors() as e:
                self.notes.append(f"zip member {name} does not read ({type(e).__name__})")
                yield Member(f"zip member {name}", name, None)
                continue
            with fh:
                read = _Bounded(fh.read, b.max_decompressed, self.notes,
                                f"zip member {name} decompresses past the {b.max_decompressed}-"
                                "byte bound: scanned up to the bound",
                                f"zip member {name} does not read")
                yield Member(f"zip member {name}", name, read)
            total += read.count
            if total > b.max_decompressed * 4:
                self.notes.append("zip archive decompresses past its total bound: the rest not "
                                  "scanned")
                return

    def _tar(self, fileobj: object, mode: str, prefix: str) -> Iterator[Member]:
        import tarfile

        b = self.bounds
        try:
            # (`mode` is one of the read modes the stubs list, held in a plain str)
            tf = tarfile.open(fileobj=fileobj, mode=mode)  # type: ignore[call-overload]
        except _read_errors() as e:
            self.notes.append(f"tar archive does not open ({type(e).__name__})")
            return
        n = 0
        try:
            for member in tf:
                n += 1
                if n > b.max_members:
                    self.notes.append(f"tar archive has more than {b.max_members} members: "
                                      "the rest not scanned")
                    return
                chain = f"{prefix}tar member {member.name}"
                fh = tf.extractfile(member) if member.isfile() else None
                if fh is None:
                    yield Member(chain, member.name, None)
                    continue
                yield Member(chain, member.name, _Bounded(
                    fh.read, b.max_decompressed, self.notes,
                    f"tar member {member.name} is over the {b.max_decompressed}-byte bound: "
                    "scanned up to the bound", f"tar member {member.name} does not read"))
        except _read_errors() as e:
            self.notes.append(f"tar archive is damaged after {n} members ({type(e).__name__})")
