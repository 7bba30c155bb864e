"""Sandboxes for untrusted controllers: providers `gvisor`, `docker`, `process`, and their tiers.

    st = stage.stage("agent/controller.py")            # the one copy that is scanned and mounted
    box = sandbox.open_sandbox("gvisor", st, course_info, flights=64, min_tier="kernel")
    box.session.send(...); box.session.recv(...)        # the protocol (see runner.py)
    box.tier, box.evidence                               # what was configured and seen

A provider never falls back to another: asking for `gvisor` where runsc is missing is an error,
and a sandbox whose start-up checks do not support its configured tier is recorded one tier lower
(and refused under `--min-tier`).
"""

from __future__ import annotations

import json
import time
from typing import NamedTuple

from plimsoll_ci.errors import BadInput, SandboxError
from plimsoll_ci.sandbox import tiers
from plimsoll_ci.sandbox.session import Limits, Session
from plimsoll_ci.sandbox.stage import Stage

PROVIDERS = ("gvisor", "docker", "process")


class Opened(NamedTuple):
    """A sandbox whose runner has imported the controller and made one per flight."""

    session: Session
    tier: str
    configured_tier: str
    evidence: dict
    startup_cpu: float
    startup_wall: float


class StartupFailure(NamedTuple):
    """The sandbox started but the controller did not get ready (every flight ends with `why`)."""

    reason: str  # "controller_error" | "budget" | "timeout_wall" | "crash" | "protocol"
    detail: str
    evidence: dict
    tier: str
    configured_tier: str
    startup_cpu: float
    startup_wall: float


def configured_tier(provider: str) -> str:
    """The tier a provider is configured as, before any check ran."""
    if provider == "gvisor":
        return "kernel"
    if provider == "docker":
        import os

        from plimsoll_ci.sandbox.docker import RUNTIME_ENV, tier_of

        return tier_of(os.environ.get(RUNTIME_ENV) or "runsc")
    if provider == "process":
        return "process"
    raise BadInput(f"provider {provider!r}: unknown; use one of {', '.join(PROVIDERS)}")


def available(provider: str) -> tuple[bool, str]:
    """Whether `provider` can start here, and if not, why."""
    if provider == "gvisor":
        from plimsoll_ci.sandbox import gvisor

        return gvisor.available()
    if provider == "docker":
        from plimsoll_ci.sandbox import docker

        return docker.available()
    configured_tier(provider)
    return True, ""


def start(provider: str, st: Stage, limits: Limits) -> Session:
    """Start the runner under `provider` (no protocol spoken yet)."""
    if provider == "gvisor":
        from plimsoll_ci.sandbox import gvisor

        return gvisor.start(st, limits)
    if provider == "docker":
        from plimsoll_ci.sandbox import docker

        return docker.start(st, limits)
    if provider == "process":
        from plimsoll_ci.sandbox import process

        return process.start(st, limits)
    raise BadInput(f"provider {provider!r}: unknown; use one of {', '.join(PROVIDERS)}")


def open_sandbox(provider: str, st: Stage, course_info: dict, flights: int,
                 limits: Limits | None = None, min_tier: str | None = None,
                 startup_cpu: float = 20.0, startup_wall: float = 120.0) -> Opened | StartupFailure:
    """Start a sandbox, run the start-up checks, import the controller, make `flights` of them.

    Raises SandboxError when the provider cannot start or the tier seen is below `min_tier`;
    returns StartupFailure when the controller itself fails to import or construct in time.
    """
    limits = limits or Limits()
    configured = configured_tier(provider)
    tiers.require(configured, min_tier, f"provider {provider}")
    session = start(provider, st, limits)
    try:
        start_msg = {"start": {
            "course": course_info, "module": st.module, "canary": str(st.canary),
            "flights": flights, "path": session.code_path,
            "limits": {"memory": limits.memory_bytes, "nproc": limits.pids,
                       "fsize": limits.tmpfs_bytes, "nofile": 256},
        }}
        t0 = time.monotonic()
        c0 = 0.0
        session.send(json.dumps(start_msg, separators=(",", ":")).encode() + b"\n")
        got = session.recv(startup_cpu, startup_wall, cpu_start=c0, wall_start=t0)
        cpu_used = got.cpu
        wall_used = time.monotonic() - t0 + session.start_seconds
        evidence = dict(session.host_evidence)
        evidence["start_seconds"] = round(session.start_seconds, 3)
        if got.line is None:
            why = {"cpu": "budget", "wall": "timeout_wall", "eof": "crash", "size": "protocol"}
            detail = {"cpu": f"start-up used more than {startup_cpu:g} s of CPU (import or "
                             "constructor)",
                      "wall": f"start-up took more than {startup_wall:g} s wall clock",
                      "eof": "the sandbox exited before the controller was ready",
                      "size": "start-up reply longer than the line bound"}[got.why]
            stderr = session.stderr_text().strip()
            if got.why == "eof" and provider == "gvisor" and "cgroup" in stderr.lower():
                from plimsoll_ci.sandbox import gvisor

                if gvisor.disable_cgroups(_last_line(stderr)):
                    session.close()
                    return open_sandbox(provider, st, course_info, flights, limits, min_tier,
                                        startup_cpu, startup_wall)
            if got.why == "eof" and stderr:
                detail += f" (stderr: {_last_line(stderr)})"
            session.close()
            evidence["checks"] = []
            tier = _unchecked_tier(configured)
            tiers.require(tier, min_tier, f"provider {provider} (start-up checks not seen)")
            return StartupFailure(why[got.why], detail, evidence, tier, configured,
                                  cpu_used, wall_used)
        try:
            hello = json.loads(got.line)
            probes = hello["hello"]
            if not isinstance(probes, dict):
                raise TypeError("hello is not an object")
        except (ValueError, KeyError, TypeError):
            session.close()
            raise SandboxError(f"provider {provider}: the runner's first line is not a hello; "
                               "the sandbox or its runtime is broken") from None
        seen = tiers.checks(probes)
        tier, notes = tiers.effective(configured, seen)
        evidence["checks"] = [c._asdict() for c in seen]
        evidence["inside"] = {k: probes.get(k) for k in
                              ("proc_version", "kernel_log_head", "interfaces", "mounts",
                               "uid", "pid")}
        if notes:
            evidence["tier_notes"] = notes
        try:
            tiers.require(tier, min_tier, f"provider {provider}")
        except SandboxError:
            session.close()
            raise
        if "fatal" in hello or not isinstance(hello.get("ready"), int):
            session.close()
            detail = "".join(c if c.isprintable() else "?"
                             for c in str(hello.get("fatal", "no ready count"))[:300])
            return StartupFailure("controller_error", f"import or constructor: {detail}",
                                  evidence, tier, configured, cpu_used, wall_used)
        if hello["ready"] != flights:
            session.close()
            return StartupFailure("protocol", f"runner made {hello['ready']} controllers, "
                                  f"not {flights}", evidence, tier, configured, cpu_used,
                                  wall_used)
        return Opened(session, tier, configured, evidence, cpu_used, wall_used)
    except BaseException:
        session.close()
        raise


def _unchecked_tier(configured: str) -> str:
    # Without the runner's hello no check was seen: nothing above `process` is earned.
    return "process"


def _last_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return "".join(c if c.isprintable() else "?" for c in (lines[-1] if lines else "")[:200])


def smoke(argv: list[str]) -> int:
    """Start one sandbox per provider that is available here; print the tier each earned."""
    import sys
    import tempfile

    from plimsoll_ci.sandbox import stage as stage_mod

    wanted = argv or list(PROVIDERS)
    code = "class Controller:\n    def __init__(self, info):\n        pass\n"
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/controller.py"
        with open(path, "w") as fh:
            fh.write(code)
        for provider in wanted:
            ok, why = available(provider)
            if not ok:
                print(f"smoke: {provider}: not available: {why}")
                failed += provider in argv or provider == "gvisor"
                continue
            st = stage_mod.stage(path)
            try:
                opened = open_sandbox(provider, st, {}, 1)
                if isinstance(opened, StartupFailure):
                    print(f"smoke: {provider}: FAILED: {opened.reason}: {opened.detail}")
                    failed += 1
                    continue
                opened.session.close()
                passed = [c["name"] for c in opened.evidence["checks"] if c["passed"]]
                print(f"smoke: {provider}: tier {opened.tier} (configured "
                      f"{opened.configured_tier}); start {opened.startup_wall:.2f} s; "
                      f"checks passed: {', '.join(passed) or 'none'}")
            except SandboxError as e:
                print(f"smoke: {provider}: FAILED: {e}")
                failed += 1
            finally:
                stage_mod.cleanup(st)
    sys.stdout.flush()
    return 1 if failed else 0
