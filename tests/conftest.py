"""Fixtures shared by every test area.

- `gvisor`, `docker_runsc`: the sandbox providers. Outside CI a missing runsc / dockerd skips with
  the reason; with CI=true it fails, so a CI machine that lost its sandbox can never pass by
  skipping the tests that matter.
- `leak`: the leak guard of `tests/kit/scan.py`; at teardown it also checks everything the
  test printed for a withheld value.
- The heavy modules start first: with pytest-xdist a module's tests stay on one worker, so a
  module of slow or sandboxed tests collected last would run alone at the end while the other
  workers sit idle (longest first is the classic fix for such a tail).
- `sarif_rules`: GitHub's and SARIF's own rules over SARIF files, by the real SARIF Multitool
  (npm `@microsoft/sarif-multitool`, which `.ci/run` installs into `.ci/cache`); skips outside CI
  when it is missing, fails in CI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kit.scan import LeakGuard

HEAVY = ("slow", "gvisor", "docker")


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a non-interactive shell inherits SIGINT ignored, and
    every process it starts would too: the tests that stop a child with SIGINT (Ctrl-C) need it
    live. A handler (not SIG_IGN) is reset to the default in a child, so children get Ctrl-C."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:  # not the main thread: leave it
            pass


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules holding a test marked slow, gvisor or docker first; the order within a module,
    and among the rest, stays as collected (every worker sorts alike, as xdist requires)."""
    heavy = {item.path for item in items if any(item.get_closest_marker(m) for m in HEAVY)}
    items.sort(key=lambda item: item.path not in heavy)


def _need(provider: str) -> None:
    from plimsoll_ci.sandbox.all_providers import PROVIDERS

    ok, why = PROVIDERS[provider].available()
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{provider} is required in CI and is unavailable: {why}", pytrace=False)
    pytest.skip(f"{provider} unavailable here: {why}")


@pytest.fixture
def gvisor() -> str:
    """The gvisor provider, or a skip (outside CI) / failure (CI=true) saying why not."""
    _need("gvisor")
    return "gvisor"


@pytest.fixture
def docker_runsc() -> str:
    """The docker provider with the runsc runtime, or skip / fail as for gvisor."""
    _need("docker")
    return "docker"


@pytest.fixture
def leak(capfd: pytest.CaptureFixture[str]):
    """The leak guard; at teardown it also checks everything the test printed."""
    guard = LeakGuard()
    yield guard
    out, err = capfd.readouterr()
    guard.text(out, "captured stdout")
    guard.text(err, "captured stderr")


REPO = Path(__file__).resolve().parents[1]
# The npm package `@microsoft/sarif-multitool` runs its platform package's binary through a shell,
# which splits `--rule-kind "Gh;Sarif"` at the `;`: the binary is called directly.
MULTITOOL = (REPO / ".ci" / "cache" / "node_modules" / "@microsoft"
             / f"sarif-multitool-{'darwin' if sys.platform == 'darwin' else 'linux'}"
             / "Sarif.Multitool")


@pytest.fixture(scope="session")
def sarif_rules(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., list[str]]:
    """`check(*sarif_files) -> problems`: every error and warning of the SARIF Multitool's
    `validate --rule-kind "Gh;Sarif"` (GitHub's upload rules and SARIF's own), one
    `RULE file: message` string each; [] when every file passes."""
    if not os.access(MULTITOOL, os.X_OK):
        why = (f"the SARIF Multitool is not installed at {MULTITOOL}: .ci/run installs it "
               "(npm install --prefix .ci/cache @microsoft/sarif-multitool)")
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    out_dir = tmp_path_factory.mktemp("multitool")

    def check(*files: Path) -> list[str]:
        out = out_dir / f"validation-{len(list(out_dir.iterdir()))}.sarif"
        proc = subprocess.run(
            [str(MULTITOOL), "validate", *map(str, files), "--rule-kind", "Gh;Sarif",
             "--level", "Error;Warning", "--output", str(out), "--log", "ForceOverwrite",
             "--quiet"],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1",
                 "DOTNET_CLI_TELEMETRY_OPTOUT": "1"})
        assert out.is_file(), f"the Multitool wrote no log (exit {proc.returncode}):\n" \
            f"{proc.stdout}{proc.stderr}"
        problems = []
        for run in json.loads(out.read_text(encoding="utf-8-sig"))["runs"]:
            rules = {r["id"]: r for r in run.get("tool", {}).get("driver", {}).get("rules", [])}
            for r in run.get("results", []):
                if r.get("level", "warning") not in ("error", "warning"):
                    continue
                where = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                msg = r["message"]
                args = msg.get("arguments", [])
                template = rules.get(r["ruleId"], {}).get("messageStrings", {}).get(
                    msg.get("id", ""), {}).get("text", msg.get("text", ""))
                for i, a in enumerate(args):
                    template = template.replace(f"{{{i}}}", str(a))
                problems.append(f"{r['ruleId']} {Path(where).name}: {template}")
        return problems

    return check
