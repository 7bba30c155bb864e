"""Demo run records without a grading, for the attest tests and `benchmarks/bench_verify.py`.

The numbers are made up; the fresh sets are real (drawn, committed and revealed), so a demo bundle
exercises every check `verify` makes.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from plimsoll_ci.attest import bundle, record
from plimsoll_ci.attest.keys import Signer
from plimsoll_ci.grading import fresh

_PROVIDERS = (("gvisor", "kernel"), ("docker", "kernel"), ("process", "process"))


def demo_run(i: int, flights: int = 4, fresh_set: fresh.FreshSet | None = None
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (result document, predicate) of made-up run number `i` (on `fresh_set`, default a new
    one)."""
    fresh_set = fresh_set or fresh.draw(flights)
    landed = (i * 7) % (flights + 1)
    result = {
        "course": "hard",
        "flights": [
            {"flight": k, "outcome": "landed" if k < landed else "crashed", "cpu_s": 0.25 + k / 100}
            for k in range(flights)
        ],
        "landed": landed,
        "total": flights,
    }
    provider, tier = _PROVIDERS[i % len(_PROVIDERS)]
    controller = {
        "controller.py": hashlib.sha256(b"def step(obs): return [0.0, 0.0]  # %d" % i).hexdigest(),
        "requirements.txt": hashlib.sha256(b"").hexdigest(),
    }
    predicate = record.make_predicate(
        result_doc=result,
        controller_files=controller,
        course="hard",
        provider=provider,
        tier=tier,
        evidence={"runtime": provider, "checks": {"network": "loopback only", "root": "read-only"}},
        cpu_budget={"per_tick_s": 0.05, "per_flight_s": 30.0},
        started="2026-01-31T12:00:00Z",
        finished="2026-01-31T12:00:05Z",
        practice_set_digest=record.practice_set_digest(range(1_000_000_001, 1_000_000_017)),
        fresh_commitment=fresh.commit(fresh_set),
        fresh_reveal=fresh.reveal(fresh_set),
    )
    return result, predicate


def write_demo_bundle(path: str | os.PathLike[str], signer: Signer, count: int,
                      one_fresh_set: bool = False) -> int:
    """Append `count` demo records to the bundle at `path` in one sealed write (every record on
    one fresh set, as a squeeze flies it, when `one_fresh_set`); the new count."""
    shared = fresh.draw(4) if one_fresh_set else None
    return bundle.append_runs(path, [demo_run(i, fresh_set=shared) for i in range(count)], signer)
