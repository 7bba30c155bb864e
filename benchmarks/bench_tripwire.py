"""Benchmark: the tripwire over 10,000 recorded requests (about 50 MB); target <= 10 s.

Writes a recording as `plimsoll-ci record` would (request.json + request.body + response files) of
chat-completions, Anthropic messages, Gemini generateContent (with base64 images) and multipart
uploads, then times, in the same run:
  baseline  read every file and json.loads the JSON ones (the least any reader must do)
  tripwire  plimsoll_ci.tripwire.scan_requests with a 20-entry sealed set
and prints both and their ratio. Usage: python3 benchmarks/bench_tripwire.py [N_REQUESTS]
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import sys
import tempfile
import time

WORDS = ("the drone holds altitude while the gust passes then turns toward the gate and lands "
         "on the pad with a margin of error under one meter per second reported by the judge").split()


def _text(rng: random.Random, n_words: int) -> str:
    out = []
    for i in range(n_words):
        out.append(rng.choice(WORDS))
        if i % 17 == 16:
            out.append(f"t={rng.randint(0, 300)}.{rng.randint(0, 9)}s")
        if i % 29 == 28:
            out.append(str(rng.randint(0, 10**6)))
    return " ".join(out)


def _body(rng: random.Random, i: int) -> tuple[bytes, str]:
    kind = i % 10
    if kind < 6:  # OpenAI chat completions
        msgs = [{"role": "system", "content": _text(rng, 120)}]
        for _ in range(4):
            msgs.append({"role": "user", "content": _text(rng, 100)})
            msgs.append({"role": "assistant", "content": _text(rng, 60)})
        return json.dumps({"model": "gpt-4o", "messages": msgs, "temperature": 0.2}).encode(), \
            "application/json"
    if kind < 8:  # Anthropic messages with an image
        img = bytes(rng.getrandbits(8) for _ in range(1500))
        doc = {"model": "claude", "max_tokens": 512, "messages": [{"role": "user", "content": [
            {"type": "text", "text": _text(rng, 300)},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(img).decode()}}]}]}
        return json.dumps(doc).encode(), "application/json"
    if kind < 9:  # Gemini generateContent
        img = bytes(rng.getrandbits(8) for _ in range(1200))
        doc = {"contents": [{"role": "user", "parts": [
            {"text": _text(rng, 400)},
            {"inlineData": {"mimeType": "image/jpeg", "data": base64.b64encode(img).decode()}}]}]}
        return json.dumps(doc).encode(), "application/json"
    boundary = f"----bench{i:08d}"
    clip = bytes(rng.getrandbits(8) for _ in range(3000))
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
            f"assistants\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"clip-{i:05d}.mp4\"\r\nContent-Type: video/mp4\r\n\r\n").encode() + clip + \
        f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def make_recording(folder: str, n: int) -> int:
    rng = random.Random(8)
    total = 0
    for i in range(1, n + 1):
        body, ctype = _body(rng, i)
        stem = os.path.join(folder, f"{i:06d}")
        meta = {"format": "plimsoll-record/1", "seq": i, "time": "2026-01-01T00:00:00Z",
                "client": "127.0.0.1", "method": "POST", "target": "/v1/chat/completions",
                "upstream": "http://127.0.0.1:1", "headers": [
                    ["Host", "127.0.0.1:8788"], ["Content-Type", ctype],
                    ["Content-Length", str(len(body))], ["Authorization", "[redacted]"]],
                "body": f"{i:06d}.request.body", "body_bytes": len(body),
                "body_sha256": hashlib.sha256(body).hexdigest(), "redacted": ["Authorization"]}
        resp = json.dumps({"choices": [{"message": {"content": _text(rng, 40)}}]}).encode()
        for name, data in ((".request.body", body),
                           (".request.json", json.dumps(meta, indent=2).encode()),
                           (".response.body", resp),
                           (".response.json", b'{"format": "plimsoll-record/1", "seq": %d}' % i)):
            with open(stem + name, "wb") as fh:
                fh.write(data)
            total += len(data)
    return total


def baseline(folder: str) -> float:
    t = time.perf_counter()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as fh:
            data = fh.read()
        if name.endswith(".json") or data[:1] == b"{":
            json.loads(data)
    return time.perf_counter() - t


def main() -> int:
    from plimsoll_ci.tripwire import scan_requests
    from plimsoll_ci.withheld import build_set, parse

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    values = [(f"sealed:{k}", v) for k, v in enumerate(
        ["3107713414", "0:31.5", "quorvantile", "skip-step-3.mp4", "884213370", "12.75",
         "vokarimesu", "tebevebupu", "gate seven left", "4:02.125", "2718281828", "0.000731",
         "clip-zebra-9.mp4", "heldout-b", "1618033988", "pad-k2", "77.125", "zulmarine",
         "99991.5", "kestrelwind"])]
    doc, _ = build_set(values=values, tag="plimsoll-sealed/1")
    wset = parse(doc)
    with tempfile.TemporaryDirectory() as folder:
        size = make_recording(folder, n)
        base = baseline(folder)
        t = time.perf_counter()
        result = scan_requests(folder, wset)
        trip = time.perf_counter() - t
    print(f"recording: {n} requests, {size / 1e6:.1f} MB in {4 * n} files")
    print(f"baseline (read + json.loads): {base:6.2f} s")
    print(f"tripwire (scan_requests):     {trip:6.2f} s   ratio {trip / base:.1f}x baseline; "
          f"target <= 10 s: {'met' if trip <= 10 else 'MISSED'}")
    print(f"findings: {len(result.findings)}, notes: {len(result.notes)}, "
          f"{result.bytes / max(trip, 1e-9) / 1e6:.1f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
