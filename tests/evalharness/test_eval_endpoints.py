"""Per-model endpoints (`--model NAME=URL`, `--model-key-env NAME=VAR`) and models side by side
(`--jobs N`): each model's requests reach its own server with its own key, and the results are
the same for any N."""

from __future__ import annotations

import json

import pytest
from kit.chat_server import ChatServer
from kit.evalharness import KEY, eval_cli, fix, reply, tasks

pytestmark = pytest.mark.gvisor

BETA_KEY = "sk-proj-BETAtestKEY0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def _run(repo, task_dir, out, alpha: ChatServer, beta: ChatServer, jobs: int):
    alpha.push(reply([fix("off-by-one")]))
    beta.push(reply([("shelf/dates.py", "def loan_days(start, end):\n    return 0\n")]))
    return eval_cli("eval", "run", "--repo", str(repo), "--tasks", str(task_dir), "--out", str(out),
               "--model", f"alpha={alpha.url}", "--model", f"beta={beta.url}",
               "--model-key-env", "alpha=ALPHA_KEY", "--model-key-env", "beta=BETA_KEY",
               "--runs", "1", "--max-tokens", "100000", "--jobs", str(jobs),
               env={"ALPHA_KEY": KEY, "BETA_KEY": BETA_KEY})


def test_each_model_reaches_its_own_endpoint_and_any_jobs_gives_the_same_results(
        gvisor, repo, tmp_path):
    task_dir = tasks(tmp_path, "off-by-one")
    outcomes = []
    for jobs in (1, 2):
        alpha, beta = ChatServer(models=("alpha",)), ChatServer(models=("beta",))
        try:
            done = _run(repo, task_dir, tmp_path / f"out{jobs}", alpha, beta, jobs)
            assert done.returncode == 0, done.stderr
            [a_req] = alpha.chat_requests
            [b_req] = beta.chat_requests
            assert a_req.json["model"] == "alpha" and b_req.json["model"] == "beta"
            assert a_req.headers.get("authorization") == f"Bearer {KEY}"
            assert b_req.headers.get("authorization") == f"Bearer {BETA_KEY}"
        finally:
            alpha.close()
            beta.close()
        saved = json.loads((tmp_path / f"out{jobs}" / "results.json").read_text())
        outcomes.append([(d["model"], d["task"], d["run"], d["honest_pass"], d["touched"])
                         for d in saved["attempts"]])
    assert outcomes[0] == outcomes[1] == [("alpha", "off-by-one", 1, True, ["shelf/dates.py"]),
                                          ("beta", "off-by-one", 1, False, ["shelf/dates.py"])]
