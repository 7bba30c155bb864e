"""Benchmark: verify a bundle of 10,000 signed run records (target: at most 5 s).

Baselines measured in the same run on the same file: reading it, and plain `json.loads` of every
line (what any reader pays). Also: writing the bundle in one sealed batch, and one append to it
(which re-checks the existing bundle before re-sealing).

    python3 benchmarks/bench_verify.py [--records N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "attest"))

import attest_demo as demo  # noqa: E402  (made-up records: a test helper)

from plimsoll_ci.attest import bundle, keys  # noqa: E402

TARGET_S = 5.0


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    signer = keys.generate()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.intoto.jsonl"
        runs = [demo.demo_run(i) for i in range(args.records)]
        write_s, _ = _timed(lambda: bundle.append_runs(path, runs, signer))
        size = path.stat().st_size

        read_s, data = _timed(path.read_bytes)
        parse_s, _ = _timed(lambda: [json.loads(line) for line in data.splitlines()])
        sig = signer.sign(b"x" * 1500)
        floor_s, _ = _timed(lambda: [(json.loads(line), signer.public.verify(sig, b"x" * 1500))
                                     for line in data.splitlines()])
        cpu0 = time.process_time()
        verify_s, report = _timed(lambda: bundle.verify_bundle(path, signer.public, args.records))
        verify_cpu_s = time.process_time() - cpu0
        assert report.ok, report.problems[:3]
        cpus = len(os.sched_getaffinity(0))
        parallel_s, report = _timed(
            lambda: bundle.verify_bundle(path, signer.public, args.records, workers=cpus)
        )
        assert report.ok, report.problems[:3]
        append_s, count = _timed(lambda: bundle.append_run(path, *demo.demo_run(0), signer))
        assert count == args.records + 1

    per_record_us = verify_s / args.records * 1e6
    print(f"bundle: {args.records} records, {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs (others' work slows every number here alike)")
    print(f"write (one sealed batch):     {write_s:7.3f} s")
    print(f"baseline read bytes:          {read_s:7.3f} s")
    print(f"baseline json.loads per line: {parse_s:7.3f} s")
    print(f"verify (signatures, links, checkpoint, results, reveals): {verify_s:7.3f} s "
          f"({per_record_us:.0f} us/record)")
    print(f"verify CPU time (what the wall time is on an idle machine): {verify_cpu_s:7.3f} s")
    print(f"verify --jobs {cpus}:               {parallel_s:7.3f} s")
    print(f"baseline json.loads + one Ed25519 verify per line (the floor): {floor_s:7.3f} s")
    print(f"ratio verify / plain JSON parse: {verify_s / parse_s:5.1f}x; "
          f"verify / floor: {verify_s / floor_s:4.2f}x")
    print(f"append one record to it (re-checks, re-seals, fsync, rename): {append_s:7.3f} s")
    budget = TARGET_S * args.records / 10_000
    wall = "PASS" if verify_s <= budget else "MISS"
    cpu = "PASS" if verify_cpu_s <= budget else "MISS"
    print(f"target: 10,000 records verified in <= {TARGET_S:.0f} s -> wall {wall}, CPU {cpu}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
