"""Benchmark: the tripwire over 10,000 recorded requests (about 50 MB); target <= 10 s.

Writes two recordings as `plimsoll-ci record` would (request.json + request.body + response
files), each of N requests:
  sessions  what an agent harness sends: sessions of 10 turns, each turn re-sending the harness's
            system prompt, the task and the history so far (OpenAI chat, Anthropic messages with
            base64 screenshots, Gemini generateContent), and a multipart clip upload per session
  unique    every request's text and images drawn fresh (no repeats at all: the worst case)
and times, in the same run, for each:
  baseline  read every file and json.loads the JSON ones (the least any reader must do)
  tripwire  plimsoll_ci.tripwire.requests.scan_requests with a 20-entry sealed set
printing both and their ratio. The 10 s target is for the sessions recording; the unique one is
printed beside it. Usage: python3 benchmarks/bench_tripwire.py [N_REQUESTS]
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


def _write(folder: str, i: int, body: bytes, ctype: str, rng: random.Random) -> int:
    stem = os.path.join(folder, f"{i:06d}")
    meta = {"format": "plimsoll-record/1", "seq": i, "time": "2026-01-01T00:00:00Z",
            "client": "127.0.0.1", "method": "POST", "target": "/v1/chat/completions",
            "upstream": "http://127.0.0.1:1", "headers": [
                ["Host", "127.0.0.1:8788"], ["Content-Type", ctype],
                ["Content-Length", str(len(body))], ["Authorization", "[redacted]"]],
            "body": f"{i:06d}.request.body", "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(), "redacted": ["Authorization"]}
    resp = json.dumps({"choices": [{"message": {"content": _text(rng, 40)}}]}).encode()
    total = 0
    for name, data in ((".request.body", body),
                       (".request.json", json.dumps(meta, indent=2).encode()),
                       (".response.body", resp),
                       (".response.json", b'{"format": "plimsoll-record/1", "seq": %d}' % i)):
        with open(stem + name, "wb") as fh:
            fh.write(data)
        total += len(data)
    return total


def make_unique(folder: str, n: int) -> int:
    """Every request drawn fresh: nothing repeats."""
    rng = random.Random(8)
    return sum(_write(folder, i, *_body(rng, i), rng) for i in range(1, n + 1))


def make_sessions(folder: str, n: int, turns: int = 10) -> int:
    """Agent sessions: each turn re-sends the system prompt, the task and the history."""
    rng = random.Random(9)
    system = _text(rng, 150)  # one harness, one system prompt
    total, i = 0, 0
    while i < n:
        api = (i // turns) % 3
        task = _text(rng, 80)
        history: list[tuple[str, str, bytes | None]] = []
        for turn in range(turns):
            if i >= n:
                break
            i += 1
            shot = bytes(rng.getrandbits(8) for _ in range(1500)) if turn % 3 == 0 else None
            history.append((_text(rng, 25), _text(rng, 12), shot))
            if api == 0:
                msgs = [{"role": "system", "content": system}, {"role": "user", "content": task}]
                for obs, reply, _ in history:
                    msgs += [{"role": "user", "content": obs},
                             {"role": "assistant", "content": reply}]
                doc = {"model": "gpt-4o", "messages": msgs[:-1]}
            elif api == 1:
                msgs = [{"role": "user", "content": [{"type": "text", "text": task}]}]
                for obs, reply, img in history:
                    content = [{"type": "text", "text": obs}]
                    if img is not None:
                        content.append({"type": "image", "source": {
                            "type": "base64", "media_type": "image/png",
                            "data": base64.b64encode(img).decode()}})
                    msgs += [{"role": "user", "content": content},
                             {"role": "assistant", "content": reply}]
                doc = {"model": "claude", "system": system, "max_tokens": 512,
                       "messages": msgs[:-1]}
            else:
                parts = [{"text": system}, {"text": task}]
                for obs, reply, img in history:
                    parts.append({"text": obs})
                    if img is not None:
                        parts.append({"inlineData": {"mimeType": "image/jpeg",
                                                     "data": base64.b64encode(img).decode()}})
                    parts.append({"text": reply})
                doc = {"contents": [{"role": "user", "parts": parts[:-1]}]}
            if turn == turns - 1:
                body, ctype = _body(rng, 9)  # the session's clip upload (multipart)
            else:
                body, ctype = json.dumps(doc).encode(), "application/json"
            total += _write(folder, i, body, ctype, rng)
    return total


def _cpu() -> float:
    """CPU seconds of this process and its finished workers (a fair number on a busy machine)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def baseline(folder: str) -> float:
    t = time.perf_counter()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as fh:
            data = fh.read()
        if name.endswith(".json") or data[:1] == b"{":
            json.loads(data)
    return time.perf_counter() - t


def main() -> int:
    from plimsoll_ci.tripwire.requests import default_jobs, scan_requests
    from plimsoll_ci.withheld import SEALED_FORMAT, build_set, parse

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    values = [(f"sealed:{k}", v) for k, v in enumerate(
        ["3107713414", "0:31.5", "quorvantile", "skip-step-3.mp4", "884213370", "12.75",
         "vokarimesu", "tebevebupu", "gate seven left", "4:02.125", "2718281828", "0.000731",
         "clip-zebra-9.mp4", "heldout-b", "1618033988", "pad-k2", "77.125", "zulmarine",
         "99991.5", "kestrelwind"])]
    doc, _ = build_set(values=values, tag=SEALED_FORMAT)
    wset = parse(doc)
    met = True
    for name, make in (("sessions", make_sessions), ("unique", make_unique)):
        with tempfile.TemporaryDirectory() as folder:
            size = make(folder, n)
            base = baseline(folder)
            cpu0 = _cpu()
            t = time.perf_counter()
            result = scan_requests(folder, wset)
            trip = time.perf_counter() - t
            cpu = _cpu() - cpu0
        line = f"{trip:6.2f} s   {trip / base:5.1f}x baseline"
        if name == "sessions":
            met = trip <= 10 * n / 10_000
            line += f"   target <= {10 * n / 10_000:g} s: {'met' if met else 'MISSED'}"
        print(f"{name:8s} {n} requests, {size / 1e6:5.1f} MB, {4 * n} files")
        print(f"  baseline (read + json.loads): {base:6.2f} s")
        print(f"  tripwire (scan_requests):     {line}")
        print(f"  findings {len(result.findings)}, notes {len(result.notes)}, "
              f"{size / trip / 1e6:.1f} MB/s")
        print(f"  CPU {cpu:.2f} s over {default_jobs()} worker(s): about "
              f"{cpu / default_jobs():.1f} s on an idle machine (load average now "
              f"{os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
