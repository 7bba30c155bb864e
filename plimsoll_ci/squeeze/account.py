"""The out folder and its unsigned account (`run.json`): claiming the folder, the key, the clock.

Shared by `squeeze run`, `squeeze plan` and `bundle merge`: each claims a new or empty folder,
writes the public half of its signing key as `harness.pub`, and keeps `run.json` (times, load,
versions, per-grading wall time: an account, not evidence) up to date with atomic writes.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze.artifacts import PUBLIC_KEY
from plimsoll_ci.timestamps import now_text

RUN_FORMAT = "plimsoll-squeeze-run/1"


def now() -> str:
    """The clock as a UTC time like 2026-01-31T12:00:00Z."""
    return now_text()


def load() -> list[float]:
    """The 1, 5 and 15-minute load averages ([] where there are none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def versions() -> dict[str, str]:
    """plimsoll-ci's, Python's and the platform's versions, for an account."""
    from plimsoll_ci import __version__

    return {"plimsoll_ci": __version__, "python": platform.python_version(),
            "platform": platform.platform()}


def dumps(doc: Any) -> str:
    """run.json's text (the same JSON style as the derived artifacts)."""
    from plimsoll_ci.squeeze.result import dumps as artifact_dumps

    return artifact_dumps(doc)


def write(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a reader sees the old file or the whole new one)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def claim_out(out: Path, flag: str = "--out") -> None:
    """Create the out folder, or accept an empty one; refuse one holding anything."""
    if out.exists() and not out.is_dir():
        raise BadInput(f"{flag} {out}: not a folder; give a new or empty folder")
    if out.is_dir() and any(out.iterdir()):
        raise BadInput(f"{flag} {out}: not empty; a run never overwrites another's artifacts, "
                       "give a new folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{flag} {out}: cannot create ({e.strerror})") from None


def refuse_used(out: Path, flag: str = "--out") -> None:
    """Refuse a used out folder before any work (`claim_out` claims it later)."""
    if out.is_dir() and any(out.iterdir()):
        claim_out(out, flag)


def signer(out: Path, key_file: str | None, key_env: str | None):  # -> attest.keys.Signer
    """The run's signer (a kept key, or an ephemeral one whose private half is never written);
    its public half goes to `out/harness.pub`."""
    from plimsoll_ci.attest import keys

    pub = out / PUBLIC_KEY
    if key_file is None and key_env is None:
        return keys.load_signer(ephemeral_pub_out=pub)
    kept = keys.load_signer(key_file=key_file, key_env=key_env)
    write(pub, kept.public.pem().decode("ascii"))
    return kept
