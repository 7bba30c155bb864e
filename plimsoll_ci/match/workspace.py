"""Byte arrays reused from one buffer to the next (fresh memory costs page faults on every pass).

Each thread keeps a small pool of bytearrays that the compiled passes' byte classes are handed
back to (`pooled_bytes`, `give_back_bytes`). Arrays over `KEEP` bytes are never kept, so memory
stays bounded after a huge buffer.
"""

from __future__ import annotations

import threading

KEEP = 16 * 1024 * 1024  # arrays up to this many bytes are kept for the next buffer
_LOCAL = threading.local()


def pooled_bytes(n: int) -> memoryview:
    """A memoryview of `n` bytes, its first and last 0 (the compiled part's byte classes): a
    bytearray handed back earlier when one is big enough."""
    pool = _LOCAL.__dict__.setdefault("bytes_pool", [])
    for i, arr in enumerate(pool):
        if len(arr) >= n:
            del pool[i]
            view = memoryview(arr)[:n]
            view[0] = view[n - 1] = 0
            return view
    return memoryview(bytearray(n))


def give_back_bytes(view: memoryview) -> None:
    """Return a view from `pooled_bytes` for the next buffer."""
    pool = _LOCAL.__dict__.setdefault("bytes_pool", [])
    if len(pool) < 2 and len(view) <= KEEP:
        pool.append(view.obj)
