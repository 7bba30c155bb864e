"""The four-run demonstration: a stand-in harness, canary markers, a recording proxy.

A harness hides three kinds of answer key: truth labels, reference step times and planted clip
names. A canary file gives one made-up marker per hiding place; the harness plants them where the
real secrets live and sends its requests to a model through `plimsoll-ci record`. `canary check`
passes the clean run, fails each run with one leak put back on that leak's own marker, and fails
the run that forgot to plant.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from plimsoll_ci.cli import main

PLACES = ["truth-labels", "step-times", "clip-names"]


def _seconds(clock: str) -> str:
    minutes, seconds = clock.split(":")
    return str(int(minutes) * 60 + Decimal(seconds))


def stand_in_harness(canary: Path, work: Path, base_url: str, leak: str | None,
                     plant: bool = True) -> Path:
    """Plant the markers (or not), then send three requests through the proxy at `base_url`."""
    markers = {m["place"]: m["marker"] for m in json.loads(canary.read_text())["markers"]}
    label = markers["truth-labels"] if plant else "crosswind-gate"
    step_time = markers["step-times"] if plant else "0:12.250"
    clip = markers["clip-names"] if plant else "clip-0001.mp4"
    secrets = work / "secrets"
    (secrets / "truth").mkdir(parents=True)
    (secrets / "reference").mkdir()
    (secrets / "clips").mkdir()
    (secrets / "truth" / "labels.json").write_text(json.dumps({"flight-7": label}))
    (secrets / "reference" / "steps.csv").write_text(f"step,time\n1,0:04.5\n3,{step_time}\n")
    (secrets / "clips" / clip).write_bytes(b"\x00\x00\x00\x18ftypmp42 reference flight")

    prompt = "Fly flight 7 through the three gates and land on the pad."
    if leak == "truth-labels":
        prompt += f" (The judge expects the label {label.upper()}.)"
    step_note = "Step 3 is the hardest."
    if leak == "step-times":
        # spelled in seconds, not as the m:ss.fff the reference file holds
        step_note += f" The reference reached it at t={_seconds(step_time)}s."
    upload_name = clip if leak == "clip-names" else "practice-flight.mp4"
    with httpx.Client(base_url=base_url, timeout=20) as client:
        client.post("/v1/chat/completions", json={
            "model": "gpt-4o", "messages": [{"role": "system", "content": "You fly drones."},
                                            {"role": "user", "content": prompt}]},
            headers={"Authorization": "Bearer sk-test"}).raise_for_status()
        client.post("/v1/messages", json={
            "model": "claude", "max_tokens": 256,
            "messages": [{"role": "user", "content": [{"type": "text", "text": step_note}]}]},
            headers={"x-api-key": "sk-test"}).raise_for_status()
        client.post("/v1/files", data={"purpose": "vision"}, files={
            "file": (upload_name, b"\x00\x00\x00\x18ftypmp42 practice", "video/mp4")},
        ).raise_for_status()
    return secrets


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    path = tmp_path / "canary.json"
    assert main(["canary", "make", *PLACES, "-o", str(path)]) == 0
    return path


def _run(tmp_path: Path, upstream, canary: Path, name: str, leak: str | None,
         plant: bool = True):
    from plimsoll_ci.tripwire.recorder import start_in_thread

    work = tmp_path / name
    server, url = start_in_thread(upstream.url, str(work / "requests"))
    try:
        secrets = stand_in_harness(canary, work, url, leak, plant)
    finally:
        server.shutdown()
        server.server_close()
    return secrets, work / "requests"


def _check(canary: Path, planted: Path, requests: Path, capsys) -> tuple[int, str]:
    code = main(["canary", "check", "--sealed", str(canary), "--planted", str(planted),
                 "--requests", str(requests)])
    return code, capsys.readouterr().out


def test_the_clean_run_passes(tmp_path, upstream, canary, capsys):
    planted, requests = _run(tmp_path, upstream, canary, "clean", leak=None)
    assert len(list(requests.glob("*.request.json"))) == 3
    code, out = _check(canary, planted, requests, capsys)
    assert code == 0, out
    assert all(f"ok    {p} " in out for p in PLACES), out


@pytest.mark.parametrize("leak", PLACES)
def test_each_leak_put_back_fails_on_its_own_marker(tmp_path, upstream, canary, capsys, leak):
    planted, requests = _run(tmp_path, upstream, canary, f"leak-{leak}", leak=leak)
    code, out = _check(canary, planted, requests, capsys)
    assert code == 1, out
    failed = {m.group(1) for m in re.finditer(r"^FAIL  (\S+) ", out, re.M)}
    assert failed == {leak}, out
    assert "leaked into a request" in out


def test_a_run_that_forgot_to_plant_fails(tmp_path, upstream, canary, capsys):
    planted, requests = _run(tmp_path, upstream, canary, "unplanted", leak=None, plant=False)
    code, out = _check(canary, planted, requests, capsys)
    assert code == 1, out
    assert all(f"FAIL  {p} " in out and "not found in the planted tree" in out for p in PLACES)


def test_the_canary_file_inside_the_planted_tree_does_not_count_as_planting(
        tmp_path, upstream, canary, capsys):
    planted, requests = _run(tmp_path, upstream, canary, "unplanted", leak=None, plant=False)
    (planted / "canary-copy.json").write_bytes(canary.read_bytes())
    code, out = _check(canary, planted, requests, capsys)
    assert code == 1 and "not found in the planted tree" in out


def test_check_output_never_contains_a_marker(tmp_path, upstream, canary, capsys):
    planted, requests = _run(tmp_path, upstream, canary, "leaky", leak="truth-labels")
    code, out = _check(canary, planted, requests, capsys)
    assert code == 1
    for m in json.loads(canary.read_text())["markers"]:
        assert m["marker"].lower() not in out.lower()
