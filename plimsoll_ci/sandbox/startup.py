"""Starting a sandbox: the provider's start, the runner's start-up checks, the controller's import.

The host sends the start message; the runner answers with what it saw inside (before any
controller code ran) and whether the controller imported and constructed. The host judges the
checks into a tier (`tiers.effective`) and refuses a tier below `min_tier`; a controller that fails
to get ready is a `StartupFailure` (every flight of that sandbox ends with its reason), never an
exception.
"""

from __future__ import annotations

import json
import time
from typing import NamedTuple

from plimsoll_ci import tiers
from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import all_providers
from plimsoll_ci.sandbox.session import Limits, Received, Session
from plimsoll_ci.sandbox.stage import Stage


class Startup(NamedTuple):
    """What one sandbox is started for, and the bounds of its start-up."""

    course_info: dict
    flights: int
    limits: Limits = Limits()
    min_tier: str | None = None
    cpu_s: float = 20.0  # CPU for the interpreter, imports and constructors
    wall_s: float = 120.0  # outer wall-clock bound of the whole start-up


class Opened(NamedTuple):
    """A sandbox whose runner has imported the controller and made one per flight."""

    session: Session
    tier: str
    configured_tier: str
    evidence: dict
    startup_cpu: float
    startup_wall: float


class StartupFailure(NamedTuple):
    """The sandbox started but the controller did not get ready (every flight ends with `reason`)."""

    reason: str  # "controller_error" | "budget" | "timeout_wall" | "crash" | "protocol"
    detail: str
    evidence: dict
    tier: str
    configured_tier: str
    startup_cpu: float
    startup_wall: float


_WHY = {"cpu": "budget", "wall": "timeout_wall", "eof": "crash", "size": "protocol"}


def open_sandbox(provider: str, st: Stage, start: Startup) -> Opened | StartupFailure:
    """Start a sandbox, run the start-up checks, import the controller, make its flights.

    Raises SandboxError when the provider cannot start or the tier seen is below `min_tier`;
    returns StartupFailure when the controller itself fails to import or construct in time.
    """
    chosen = all_providers.get(provider)
    configured = chosen.configured_tier()
    tiers.require(configured, start.min_tier, f"provider {provider}")
    session = chosen.start(st, start.limits)
    try:
        got, wall_used = _hello(session, st, start)
        evidence = dict(session.host_evidence)
        evidence["start_seconds"] = round(session.start_seconds, 3)
        if got.line is None:
            stderr = session.stderr_text().strip()
            if got.why == "eof" and chosen.retry_start(stderr):
                session.close()
                return open_sandbox(provider, st, start)
            session.close()
            evidence["checks"] = []
            tiers.require(tiers.UNCHECKED, start.min_tier,
                          f"provider {provider} (start-up checks not seen)")
            return StartupFailure(_WHY[got.why], _failed(got.why, start, stderr), evidence,
                                  tiers.UNCHECKED, configured, got.cpu, wall_used)
        hello, tier = _judge(got.line, provider, configured, start.min_tier, evidence)
        problem = _not_ready(hello, start.flights)
        if problem is not None:
            session.close()
            return StartupFailure(*problem, evidence, tier, configured, got.cpu, wall_used)
        return Opened(session, tier, configured, evidence, got.cpu, wall_used)
    except BaseException:
        session.close()
        raise


def _hello(session: Session, st: Stage, start: Startup) -> tuple[Received, float]:
    limits = start.limits
    message = {"start": {
        "course": start.course_info, "module": st.module, "canary": str(st.canary),
        "flights": start.flights, "path": session.code_path,
        **({"runtime": st.runtime} if st.runtime != "python" else {}),
        "limits": {"memory": limits.memory_bytes, "nproc": limits.pids,
                   "fsize": limits.tmpfs_bytes, "nofile": 256},
    }}
    t0 = time.monotonic()
    if session.send(json.dumps(message, separators=(",", ":")).encode() + b"\n",
                    start.wall_s) == "stalled":
        got = Received(None, "wall", session.cpu(), time.monotonic() - t0)
    else:  # written, or the sandbox is gone (the read below sees its end)
        got = session.recv(start.cpu_s, start.wall_s, cpu_start=0.0, wall_start=t0)
    return got, time.monotonic() - t0 + session.start_seconds


def _failed(why: str, start: Startup, stderr: str) -> str:
    detail = {"cpu": f"start-up used more than {start.cpu_s:g} s of CPU (import or constructor)",
              "wall": f"start-up took more than {start.wall_s:g} s wall clock",
              "eof": "the sandbox exited before the controller was ready",
              "size": "start-up reply longer than the line bound"}[why]
    if why == "eof" and stderr:
        detail += f" (stderr: {_last_line(stderr)})"
    return detail


def _judge(line: bytes, provider: str, configured: str, min_tier: str | None,
           evidence: dict) -> tuple[dict, str]:
    """The runner's hello and the tier its checks earned (noted in `evidence`); SandboxError for
    a broken hello or a tier below `min_tier`."""
    try:
        hello = json.loads(line)
        probes = hello["hello"]
        if not isinstance(probes, dict):
            raise TypeError("hello is not an object")
    except (ValueError, KeyError, TypeError, RecursionError):
        raise SandboxError(f"provider {provider}: the runner's first line is not a hello; "
                           "the sandbox or its runtime is broken") from None
    seen = tiers.checks(probes)
    tier, notes = tiers.effective(configured, seen)
    evidence["checks"] = [c._asdict() for c in seen]
    evidence["inside"] = {k: probes.get(k) for k in
                          ("proc_version", "kernel_log_head", "interfaces", "mounts", "uid", "pid")}
    if notes:
        evidence["tier_notes"] = notes
    tiers.require(tier, min_tier, f"provider {provider}")
    return hello, tier


def _not_ready(hello: dict, flights: int) -> tuple[str, str] | None:
    """(reason, detail) when the controller did not import or construct, else None."""
    if "fatal" in hello or not isinstance(hello.get("ready"), int):
        detail = "".join(c if c.isprintable() else "?"
                         for c in str(hello.get("fatal", "no ready count"))[:300])
        return "controller_error", f"import or constructor: {detail}"
    if hello["ready"] != flights:
        return "protocol", f"runner made {hello['ready']} controllers, not {flights}"
    return None


def _last_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return "".join(c if c.isprintable() else "?" for c in (lines[-1] if lines else "")[:200])
