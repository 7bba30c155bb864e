"""What the model client tests share: the made-up key and a config for a test endpoint."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from kit.cli import cli_argv
from plimsoll_ci.model import ModelConfig

_ROOT = Path(__file__).resolve().parents[2]

# a made-up key shaped like a real one; every test that could leak it looks for it
KEY = "sk-proj-PLIMSOLLtestKEY0a1b2c3d4e5f6a7b8c9d0e1f2"


def config_for(url: str, **overrides: object) -> ModelConfig:
    """A config for a test endpoint: short waits so retry tests stay fast."""
    values: dict = {"base_url": url, "model": "scripted", "max_tokens": 100_000, "timeout": 5.0,
                    "retries": 2, "backoff": 0.01, "max_wait": 5.0}
    values.update(overrides)
    return ModelConfig(**values)


def reflections(key: str = KEY) -> list[bytes]:
    """Every way a test's echoing endpoint writes `key` back, as bytes to look for in a file:
    plain, each character `\\u`-escaped, and the middle of its base64 at each of the three
    alignments a longer encoded run can give it (computed here, apart from the scrubber)."""
    import base64

    found = [key.encode(), "".join(f"\\u{ord(c):04x}" for c in key).encode()]
    for lead in (b"", b"a", b"ab"):
        encoded = base64.b64encode(lead + key.encode())
        found.append(encoded[4:-4])  # clear of the lead's and the end's partial characters
    return found


def carries_key(data: bytes | str, key: str = KEY) -> list[bytes]:
    """The reflections of `key` that `data` holds ([] when none)."""
    blob = data.encode() if isinstance(data, str) else data
    return [r for r in reflections(key) if r in blob]


def start_recorder(upstream: str, out: Path) -> tuple[subprocess.Popen, str]:
    """`plimsoll-ci record` as a user runs it, on a free port; (process, its base URL)."""
    env = dict(os.environ, PYTHONPATH=str(_ROOT))
    proc = subprocess.Popen(
        [*cli_argv(), "record", "--upstream", upstream,
         "--out", str(out), "--port", "0"],
        stderr=subprocess.PIPE, text=True, env=env, cwd=_ROOT)
    line = proc.stderr.readline()
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    if not found:
        proc.kill()
        proc.wait()
        pytest.fail(f"plimsoll-ci record did not start: {line!r}")
    return proc, found.group(1)
