"""Runs a composite action's steps with bash, as a GitHub runner would (inputs, GITHUB_* files)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from kit.harness_repo import KEY, hook_env

ACTION = Path(__file__).resolve().parents[2] / "actions" / "ship-scan"


def _expr(text: str, ctx: dict[str, str]) -> str:
    """The `${{ a.b }}` expressions action.yml uses: plain lookups, nothing else."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1).strip()
        assert name in ctx, f"action.yml uses ${{{{ {name} }}}}, unknown to this test"
        return ctx[name]
    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def _condition(cond: str, ctx: dict[str, str]) -> bool:
    m = re.fullmatch(r"\s*([\w.-]+)\s*==\s*'([^']*)'\s*", cond)
    assert m, f"unsupported if: {cond}"
    return ctx[m.group(1)] == m.group(2)


def run_action(workspace: Path, tmp: Path, inputs: dict[str, str],
               event: dict | None = None, event_name: str = "pull_request") -> dict:
    """Run every step of the composite action with bash, as the runner does."""
    doc = yaml.safe_load((ACTION / "action.yml").read_text())
    ctx = {f"inputs.{k}": str(v.get("default", "")) for k, v in doc["inputs"].items()}
    ctx.update({f"inputs.{k}": v for k, v in inputs.items()})
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    ctx.update({"github.action_path": str(ACTION), "runner.temp": str(runner_temp)})
    files = {n: tmp / n for n in ("output", "summary", "env", "event.json")}
    for p in files.values():
        p.write_text("")
    files["event.json"].write_text(json.dumps(event or {}))
    base_env = hook_env()
    base_env.pop("PLIMSOLL_WITHHELD_KEY")  # the key arrives only through the `key` input
    base_env.update({
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(files["event.json"]),
        "GITHUB_OUTPUT": str(files["output"]), "GITHUB_STEP_SUMMARY": str(files["summary"]),
        "GITHUB_ENV": str(files["env"]), "GITHUB_ACTION_PATH": str(ACTION),
        "RUNNER_TEMP": str(runner_temp),
    })
    log = ""
    code = 0
    for step in doc["runs"]["steps"]:
        if "if" in step and not _condition(step["if"], ctx):
            continue
        env = dict(base_env)
        for line in files["env"].read_text().splitlines():  # GITHUB_ENV from earlier steps
            k, _, v = line.partition("=")
            env[k] = v
        env.update({k: _expr(str(v), ctx) for k, v in step.get("env", {}).items()})
        assert step["shell"] == "bash"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], cwd=workspace, env=env, capture_output=True,
                              text=True)
        log += proc.stdout + proc.stderr
        code = proc.returncode
        if code:
            break
    outputs = dict(line.split("=", 1) for line in files["output"].read_text().splitlines())
    return {"code": code, "log": log, "outputs": outputs,
            "summary": files["summary"].read_text()}


def local_inputs(**more: str) -> dict[str, str]:
    """Inputs for a local run: plimsoll-ci is installed here already (no venv install step)."""
    return {"install": "false", "python": sys.executable, "key": KEY, **more}
