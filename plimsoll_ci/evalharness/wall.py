"""What stands between the model and the answers: the sandbox's tier, the recorder, the tripwire.

- `earn_tier`: one sandbox of the run's provider is started with the grader's start-up checks
  (gVisor's kernel, loopback only, read-only root, a host canary out of reach) before any attempt,
  so every record carries the tier those checks earned, never just the one configured.
- `start_recorder`: every request to the model goes through the recording proxy
  (`plimsoll-ci record`), written byte for byte under the run's `requests/` folder.
- `scan_requests`: afterwards the tripwire reads that folder against a sealed set.

The recorder and the tripwire are imported here only, each in one line, so where their modules
live is this file's business alone.
"""

from __future__ import annotations

import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

from plimsoll_ci.errors import SandboxError

_CONTROLLER = "class Controller:\n    def __init__(self, info):\n        pass\n"


def earn_tier(provider: str, min_tier: str | None) -> tuple[str, dict[str, Any]]:
    """The tier `provider`'s start-up checks earn here, and their evidence; SandboxError when
    the provider cannot start or earns less than `min_tier`."""
    from plimsoll_ci.sandbox import stage, startup

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "controller.py"
        path.write_text(_CONTROLLER)
        staged = stage.stage(str(path))
        try:
            opened = startup.open_sandbox(provider, staged,
                                          startup.Startup({}, 1, min_tier=min_tier))
            if isinstance(opened, startup.StartupFailure):
                raise SandboxError(f"provider {provider}: the start-up checks did not run "
                                   f"({opened.reason}: {opened.detail})")
            opened.session.close()
            return opened.tier, opened.evidence
        finally:
            stage.cleanup(staged)


def split_base_url(base_url: str) -> tuple[str, str]:
    """(origin, path prefix) of a base URL: the recorder forwards to the origin, and the model
    is pointed at the recorder's address plus the prefix."""
    parts = urllib.parse.urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def start_recorder(upstream: str, out: Path) -> tuple[Any, str]:
    """Start the recording proxy on 127.0.0.1 (a free port) forwarding to `upstream`, writing to
    `out`; (server, its base URL). Stop it with `stop_recorder`."""
    from plimsoll_ci.tripwire.recorder import start_in_thread

    return start_in_thread(upstream, str(out))


def stop_recorder(server: Any) -> None:
    """Stop the proxy and release its folder."""
    server.shutdown()
    server.server_close()


def scan_requests(folder: Path, sealed: Any) -> Any:
    """The tripwire over recorded requests -> ScanResult (findings name the file and the sealed
    entry, never the value)."""
    from plimsoll_ci.shipscan.results import decide_mode
    from plimsoll_ci.tripwire.requests import scan_requests as scan

    return scan(str(folder), sealed, jobs=1)._replace(mode=decide_mode(sealed.mode))


def load_sealed(path: str, key: bytes | None) -> Any:
    """A sealed set (or a withheld set, or a canary file) for the tripwire."""
    from plimsoll_ci.tripwire.sealed import load_sealed as load

    return load(path, key=key)
