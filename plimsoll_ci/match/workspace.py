"""Work arrays reused from one buffer to the next (fresh memory costs page faults on every pass).

Each thread keeps its own: a named array per use (`work_array`), and a small pool of byte arrays
that byte-class tables are handed back to (`pooled`, `give_back`; `pooled_bytes`,
`give_back_bytes` for the compiled part's, bytearrays: no numpy). Arrays over `KEEP` items are
never kept, so memory stays bounded after a huge buffer.
"""

from __future__ import annotations

import threading

KEEP = 16 * 1024 * 1024  # work arrays up to this many items are kept for the next buffer
_LOCAL = threading.local()


def work_array(name: str, n: int, dtype):  # noqa: ANN001, ANN201  (numpy; imported lazily)
    """A reused work array of `n` items of `dtype`, for the use called `name`."""
    import numpy as np

    if n > KEEP:  # a huge buffer: its work arrays are not kept after it
        return np.empty(n, dtype=dtype)
    arr = getattr(_LOCAL, name, None)
    if arr is None or len(arr) < n or arr.dtype != dtype:
        arr = np.empty(max(n, 1 << 20), dtype=dtype)
        setattr(_LOCAL, name, arr)
    return arr[:n]


def pooled(n: int):  # noqa: ANN201
    """A uint8 array of `n` bytes: one handed back earlier when one is big enough."""
    import numpy as np

    pool = _LOCAL.__dict__.setdefault("pool", [])
    for i, arr in enumerate(pool):
        if arr.dtype == np.uint8 and arr.ndim == 1 and len(arr) >= n and arr.flags.c_contiguous:
            del pool[i]
            return arr[:n]
    return np.empty(n, dtype=np.uint8)


def give_back(arr, n: int) -> None:  # noqa: ANN001
    """Return an array from `pooled` (holding `n` useful items) for the next buffer."""
    pool = _LOCAL.__dict__.setdefault("pool", [])
    if len(pool) < 2 and n <= KEEP:
        pool.append(arr.base if arr.base is not None else arr)


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
