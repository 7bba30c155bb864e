"""Attacks from inside gVisor: each is contained, each flight ends with its reason recorded.

Every attacking controller reports what its attack saw by raising (the runner turns that into a
`controller_error` whose detail the result keeps), or is stopped by the grader (budget, hang,
crash, protocol). The grader itself never raises because of what a controller did.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed

pytestmark = pytest.mark.gvisor
REPO = Path(__file__).resolve().parents[2]
SEED = Seed("seeds:1", 4111111111, True)
FAST = CpuBudget(per_tick_s=0.05, tick_slack_s=0.5, startup_s=10.0, wall_tick_s=4.0,
                 wall_startup_s=60.0)

HEAD = "import os, sys, time, socket, gc\n\n"
STEP = """
class Controller:
    def __init__(self, info):
        pass

    def step(self, obs):
{body}
"""


def controller(tmp_path: Path, body: str, top: str = "") -> str:
    indented = "\n".join("        " + line for line in body.strip("\n").splitlines())
    path = tmp_path / "controller.py"
    path.write_text(HEAD + top + STEP.format(body=indented))
    return str(path)


def flight(provider: str, path: str, seeds=(SEED,), budget=FAST) -> dict:
    graded = grade(GradeRequest(path, "easy", list(seeds), provider, budget=budget))
    assert not graded.refused
    return graded.document()["flights"][0]


def test_reading_the_simulator_and_a_seed_file_by_host_path_finds_nothing(gvisor, tmp_path):
    seed_file = tmp_path / "held-out.txt"
    seed_file.write_text("4111111111\n")
    paths = [str(REPO / "plimsoll_sim" / "generator.py"), str(seed_file), "/etc/hostname", "/root"]
    body = f"""
out = []
for p in {paths!r}:
    try:
        with open(p, 'rb') as fh:
            out.append(p + ' READ ' + str(len(fh.read())))
    except OSError as e:
        out.append(p + ' blocked ' + type(e).__name__)
raise RuntimeError('; '.join(out))
"""
    f = flight(gvisor, controller(tmp_path, body))
    assert f["reason"] == "controller_error"
    assert " READ " not in f["detail"]
    assert f["detail"].count("blocked") == 4


def test_a_tcp_socket_to_host_loopback_reaches_nothing(gvisor, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set() and not accepted:
            try:
                conn, _ = server.accept()
                accepted.append(conn)
            except TimeoutError:
                continue
            except OSError:
                return

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    body = f"""
try:
    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)
    raise RuntimeError('CONNECTED')
except OSError as e:
    raise RuntimeError('blocked ' + type(e).__name__)
"""
    try:
        f = flight(gvisor, controller(tmp_path, body))
    finally:
        done.set()
        t.join(5)
        server.close()
    assert f["reason"] == "controller_error"
    assert "blocked" in f["detail"] and "CONNECTED" not in f["detail"]
    assert not accepted


def test_a_fork_bomb_is_contained(gvisor, tmp_path):
    body = """
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    started = time.monotonic()
    f = flight(gvisor, controller(tmp_path, body))
    assert f["reason"] in ("budget", "crash", "timeout_wall")
    assert time.monotonic() - started < 120


def test_an_8_gb_allocation_fails_inside(gvisor, tmp_path):
    body = """
try:
    blob = bytearray(8 * 1024 ** 3)
    raise RuntimeError('ALLOCATED %d' % len(blob))
except MemoryError:
    raise RuntimeError('blocked MemoryError')
"""
    f = flight(gvisor, controller(tmp_path, body))
    assert f["reason"] in ("controller_error", "crash")
    assert "ALLOCATED" not in f["detail"]


def test_spinning_in_step_is_stopped_by_the_cpu_budget(gvisor, tmp_path):
    f = flight(gvisor, controller(tmp_path, "while True:\n    pass"))
    assert f["reason"] == "budget"
    assert "CPU" in f["detail"]


def test_spinning_at_import_is_stopped_by_the_start_up_budget(gvisor, tmp_path):
    path = controller(tmp_path, "return None", top="while True:\n    pass\n")
    f = flight(gvisor, path, budget=FAST._replace(startup_s=3.0))
    assert f["reason"] == "budget"
    assert "start-up" in f["detail"]


def test_writing_into_its_own_code_folder_is_refused(gvisor, tmp_path):
    body = """
out = []
for p in ('/controller/controller.py', '/controller/new.py', '/plimsoll/runner.py', '/x'):
    try:
        with open(p, 'a') as fh:
            fh.write('# changed')
        out.append(p + ' WROTE')
    except OSError as e:
        out.append(p + ' blocked ' + (e.strerror or ''))
raise RuntimeError('; '.join(out))
"""
    path = controller(tmp_path, body)
    before = Path(path).read_bytes()
    f = flight(gvisor, path)
    assert "WROTE" not in f["detail"] and f["detail"].count("blocked") == 4
    assert Path(path).read_bytes() == before


def test_garbage_on_the_protocol_channel_ends_the_flight_as_protocol(gvisor, tmp_path):
    body = """
for fd in range(3, 12):
    try:
        os.write(fd, b'garbage, not JSON\\n')
    except OSError:
        pass
time.sleep(30)
"""
    f = flight(gvisor, controller(tmp_path, body))
    assert f["reason"] == "protocol"
    assert "malformed output" in f["detail"]


def test_printing_nothing_is_a_hang_bounded_by_the_wall_clock(gvisor, tmp_path):
    f = flight(gvisor, controller(tmp_path, "time.sleep(3600)"),
               budget=FAST._replace(wall_tick_s=2.0))
    assert f["reason"] == "timeout_wall"


def test_an_early_exit_is_a_crash(gvisor, tmp_path):
    f = flight(gvisor, controller(tmp_path, "os._exit(3)"))
    assert f["reason"] == "crash"


def test_a_wrong_command_count_is_a_protocol_error(gvisor, tmp_path):
    # The controller rewrites the runner it shares a process with: it can, and it gains nothing.
    body = """
main = sys.modules['__main__']
real = main.pack
main.pack = lambda rows: real(rows[:-1])
return {'thrust': 6.0, 'roll': 0.0, 'pitch': 0.0, 'yaw_rate': 0.0}
"""
    seeds = [SEED, Seed("seeds:2", 4222222222, True)]
    graded = grade(GradeRequest(controller(tmp_path, body), "easy", seeds, gvisor, budget=FAST))
    assert not graded.refused
    reasons = {f.reason for f in graded.flights}
    assert reasons == {"protocol"}
    assert "wrong count" in graded.flights[0].detail


def test_the_runner_memory_and_stack_hold_no_flight_parameters(gvisor, tmp_path):
    # Look everywhere the controller can: every object the interpreter holds, every frame,
    # the environment, the command line and /proc. Report digests of what looks like a seed.
    body = r"""
import re, hashlib
found = set()
def note(x):
    if isinstance(x, int) and not isinstance(x, bool) and 10**6 <= x < 2**64:
        found.add(x)
    elif isinstance(x, (str, bytes)):
        for m in re.findall(r'\d{7,20}', x if isinstance(x, str) else x.decode('latin-1')):
            found.add(int(m))
for obj in gc.get_objects():
    try:
        if isinstance(obj, dict):
            for k, v in obj.items():
                note(k); note(v)
        elif isinstance(obj, (list, tuple, set)):
            for v in obj:
                note(v)
        else:
            note(obj)
    except Exception:
        pass
for frame in sys._current_frames().values():
    while frame is not None:
        for v in list(frame.f_locals.values()):
            note(v)
        frame = frame.f_back
for p in ('/proc/self/environ', '/proc/self/cmdline', '/proc/1/cmdline', '/proc/self/maps'):
    try:
        note(open(p, 'rb').read())
    except OSError:
        pass
raise RuntimeError('digests ' + ' '.join(sorted(hashlib.sha256(str(x).encode()).hexdigest()[:10] for x in found)))
"""
    f = flight(gvisor, controller(tmp_path, body))
    assert f["reason"] == "controller_error" and f["detail"].startswith("RuntimeError: digests")
    secret = hashlib.sha256(str(SEED.value).encode()).hexdigest()[:10]
    assert secret not in f["detail"]
    hidden = sim.generator.flight(SEED.value, sim.course("easy"))
    for value in hidden:
        if isinstance(value, int) and value >= 10**6:
            assert hashlib.sha256(str(value).encode()).hexdigest()[:10] not in f["detail"]


def test_a_controller_may_use_numpy_inside(gvisor, tmp_path):
    body = """
import numpy as np
raise RuntimeError('numpy ' + str(np.arange(4).sum()))
"""
    f = flight(gvisor, controller(tmp_path, body))
    assert f["detail"] == "RuntimeError: numpy 6"
