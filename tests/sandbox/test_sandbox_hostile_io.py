"""A hostile controller against the channel itself: every read and write is bounded, nothing stays.

In every provider: a controller that stops reading its input and writes replies ahead of time
ends as `timeout_wall` within the wall bound (the host never blocks in a pipe write); a reply far
over a pipe's 64 KiB arrives whole; a grading stopped by SIGTERM, SIGINT or SIGHUP stops every
sandbox it started and removes its folders. After each run no container, no runsc process and no
`plimsoll-grade-*` folder is left.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest
from kit.sandbox import SLEEPER, grade_cli, no_leftovers, wait_for_sandbox

from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import named

FAST = CpuBudget(wall_tick_s=3.0, wall_startup_s=60.0)

# Writes valid replies for 3,000 ticks straight onto the protocol channel, then never returns:
# its runner never reads another observation.
STALLER = """
import gc, io, json, os, time

class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
        out = [o for o in gc.get_objects()
               if isinstance(o, io.FileIO) and "w" in o.mode and o.fileno() > 2]
        fd = out[0].fileno()
        cmd = {"thrust": 0.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0}
        for k in range(3000):
            line = {"tick": k, "seq": k, "commands": {"json": [cmd] * FLIGHTS}, "errors": {}}
            os.write(fd, json.dumps(line).encode() + b"\\n")
        time.sleep(3600)
"""
LOUD = """
class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
        raise ValueError("\\U0001F600" * 50_000)  # a 200,000-byte message
"""
TRICKLER = """
import gc, io, os, time

class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
        out = [o for o in gc.get_objects()
               if isinstance(o, io.FileIO) and "w" in o.mode and o.fileno() > 2]
        while True:  # a byte every 5 ms, never a line end
            os.write(out[0].fileno(), b" ")
            time.sleep(0.005)
"""
SHM = """
import os

class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
        try:
            with open("/dev/shm/plimsoll-probe", "wb") as fh:
                fh.write(b"x" * 4096)
            os.unlink("/dev/shm/plimsoll-probe")
            raise RuntimeError("WROTE /dev/shm")
        except OSError as e:
            raise RuntimeError("refused " + (e.strerror or ""))
"""
@pytest.fixture(params=["process", pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    if request.param == "gvisor":
        return request.getfixturevalue("gvisor")
    if request.param == "docker":
        return request.getfixturevalue("docker_runsc")
    return "process"


def test_a_controller_that_stops_reading_and_writes_ahead_ends_as_timeout_wall(
        provider, tmp_path, private_tmp):
    controller = tmp_path / "controller.py"
    controller.write_text(STALLER.replace("FLIGHTS", "8"))
    started = time.monotonic()
    proc = grade_cli(controller, provider, 8, "--wall-per-tick", "2")
    try:
        out, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("grade hung on a controller that stopped reading its input")
    assert proc.returncode == 0, err
    flights = json.loads(out)["flights"]
    assert {f["reason"] for f in flights} == {"timeout_wall"}
    assert "stopped reading its input" in flights[0]["detail"]
    assert time.monotonic() - started < 120
    no_leftovers(private_tmp)


def test_a_reply_over_64_kib_arrives_whole(provider, tmp_path, private_tmp):
    controller = tmp_path / "controller.py"
    controller.write_text(LOUD)
    result = grade(GradeRequest(str(controller), "easy", named("seeds", range(
        5000000001, 5000000065)), provider, budget=FAST))
    # each error is cut to 300 characters, escaped in JSON: the reply is about 230 KB
    assert {f.reason for f in result.flights} == {"controller_error"}
    assert all(f.detail.startswith("ValueError: \U0001F600") for f in result.flights)
    no_leftovers(private_tmp)


def test_a_controller_that_trickles_bytes_without_a_line_end_ends_as_timeout_wall(
        provider, tmp_path, private_tmp):
    controller = tmp_path / "controller.py"
    controller.write_text(TRICKLER)
    started = time.monotonic()
    result = grade(GradeRequest(str(controller), "easy", named("seeds", [5000000001]), provider,
                                budget=FAST))
    assert [f.reason for f in result.flights] == ["timeout_wall"]
    assert time.monotonic() - started < 60
    no_leftovers(private_tmp)


def test_dev_shm_is_read_only_inside_and_the_start_up_checks_say_so(provider, tmp_path,
                                                                     private_tmp):
    controller = tmp_path / "controller.py"
    controller.write_text(SHM)
    result = grade(GradeRequest(str(controller), "easy", named("seeds", [5000000001]), provider,
                                budget=FAST))
    if provider == "process" and result.evidence["runtime"] != "bubblewrap":
        pytest.skip("no bubblewrap here: the process provider runs on the host's own /dev/shm")
    [flight] = result.flights
    assert flight.reason == "controller_error" and "refused" in flight.detail, flight.detail
    assert result.evidence["checks"][2]["name"] == "root_readonly"
    assert "/dev/shm: refused" in result.evidence["checks"][2]["seen"]
    if provider != "process":
        assert result.evidence["checks"][2]["passed"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_grading_stopped_by_a_signal_stops_its_sandboxes_and_removes_its_folders(
        provider, tmp_path, private_tmp, signum):
    controller = tmp_path / "controller.py"
    controller.write_text(SLEEPER)
    proc = grade_cli(controller, provider, 2, "--wall-per-tick", "600")
    try:
        wait_for_sandbox(proc, private_tmp)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signum, err
    assert f"stopped by {signal.Signals(signum).name}" in err
    assert out == ""
    no_leftovers(private_tmp)
