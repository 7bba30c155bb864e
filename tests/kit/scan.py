"""Shared test kit of the match, scan and cli tests: withheld sets, archives, the leak guard.

The leak guard is the suite's "never print a value" check: every test that scans hands it what
a user could see (stdout, stderr, report files, exception messages) and it fails the test when a
withheld value appears there. A shipped name that carries a value is shown redacted
(`seed-[withheld].json`) in every report, so nothing is allowed through by default; `allow` is
there for a test that must let a known text pass.
"""

from __future__ import annotations

import io
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

from plimsoll_ci.shipscan.results import Verdict
from plimsoll_ci.withheld import WithheldSet, build_set, parse

SEED = "3107713414"  # the second practice seed of the story
DECIMAL = "31.5"
TEXT = "Drone Answer Key"
VALUES = [("seeds.txt:2", SEED), ("times.txt:1", DECIMAL), ("labels.txt:1", TEXT)]


def make_set(values: Iterable[tuple[str, str]] = VALUES, files: Iterable[tuple[str, bytes]] = (),
             sources: Iterable[tuple[str, bytes]] = (), key: bytes | None = None,
             mode: str = "refuse") -> WithheldSet:
    """A parsed withheld set built in memory."""
    doc, _ = build_set(list(values), list(files), list(sources), key=key, mode=mode)
    return parse(doc, key=key)


def zip_bytes(members: Iterable[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buf.getvalue()


def tar_bytes(members: Iterable[tuple[str, bytes]], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_bomb(megabytes: int = 1024, name: bytes = b"zeros.bin") -> bytes:
    """A one-member zip whose member inflates to `megabytes` MiB of zeros (~1 KB per MiB).

    Built without inflating anything: a full flush resets the deflate state, so each MiB of
    zeros compresses to the same bytes and the stream is that block repeated.
    """
    chunk = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    assert block == again
    body = block * megabytes + c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(chunk, crc)
    size = megabytes << 20
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(body), size,
                        len(name), 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc,
                          len(body), size, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central),
                      len(local) + len(body), 0)
    return local + body + central + end


def _spellings(value: str) -> list[re.Pattern[str]]:
    """Patterns of a value's plain spelling as a whole token (a leak as a reader sees it)."""
    if re.fullmatch(r"[0-9.]+", value):
        return [re.compile(r"(?<![0-9.])" + re.escape(value) + r"(?![0-9])")]
    words = [re.escape(w) for w in value.split()]
    return [re.compile(r"(?<![A-Za-z0-9])" + r"\s+".join(words) + r"(?![A-Za-z0-9])", re.I)]


class KeepAll:
    """A verdict cache that keeps everything (a warm cache for the scan's tests)."""

    def __init__(self) -> None:
        self.store: dict[str, Verdict] = {}

    def get(self, key: str) -> Verdict | None:
        return self.store.get(key)

    def put(self, key: str, verdict: Verdict) -> None:
        self.store[key] = verdict


class LeakGuard:
    """Fails a test when a withheld value appears in what a user could see."""

    def __init__(self, values: Iterable[str] = (v for _, v in VALUES)) -> None:
        self.patterns = [(v, p) for v in values for p in _spellings(v)]
        self.allowed: list[str] = []
        self.checked = 0

    def allow(self, *shipped_paths: str) -> None:
        """Texts the guard removes before looking (none by default)."""
        self.allowed += sorted(shipped_paths, key=len, reverse=True)

    def text(self, text: str | bytes, where: str = "output") -> None:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for a in self.allowed:
            text = text.replace(a, "<shipped path>")
        self.checked += 1
        for value, p in self.patterns:
            m = p.search(text)
            # Never print the value itself, even in the failure message.
            assert m is None, f"a withheld value ({len(value)} characters) leaks into {where} " \
                f"at character {m.start()}"

    def file(self, path: str | Path) -> None:
        self.text(Path(path).read_bytes(), f"file {Path(path).name}")

    def error(self, exc: BaseException) -> None:
        self.text(str(exc), f"the {type(exc).__name__} message")


def scan_checked(items: Iterable[tuple[str, bytes]], wset: WithheldSet, guard: LeakGuard,
                 limits=None):  # -> plimsoll_ci.shipscan.results.ScanResult
    """scan_items, then every report format through the leak guard (shipped names allowed)."""
    from plimsoll_ci.shipscan import report
    from plimsoll_ci.shipscan.scan import scan_items

    items = list(items)
    # Names that carry a value are redacted in reports: no shipped path is allowed through.
    result = scan_items(items, wset, limits)
    for fmt in report.FORMATS:
        guard.text(report.render(result, fmt), f"the {fmt} report")
    for n in result.notes:
        guard.text(n, "a note")
    return result
