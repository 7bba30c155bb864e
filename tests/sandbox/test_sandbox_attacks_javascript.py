"""The attack tests ported to JavaScript: a node controller is contained as a Python one is.

Each attacking controller reports what its attack saw by throwing (the runner turns that into a
`controller_error` whose detail the result keeps), or is stopped by the grader (budget, hang,
crash, protocol). Run in gVisor and in Docker with the runsc runtime.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed

REPO = Path(__file__).resolve().parents[2]
SEED = Seed("seeds:1", 4111111111, True)
FAST = CpuBudget(per_tick_s=0.05, tick_slack_s=0.5, startup_s=10.0, wall_tick_s=4.0,
                 wall_startup_s=60.0)

HEAD = ('import fs from "node:fs";\nimport net from "node:net";\n'
        'import child_process from "node:child_process";\n\n')
STEP = """
export default class Controller {{
  constructor(info) {{}}

  step(obs) {{
{body}
  }}
}}
"""


@pytest.fixture(params=[pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    return request.getfixturevalue("gvisor" if request.param == "gvisor" else "docker_runsc")


def controller(tmp_path: Path, body: str, top: str = "") -> str:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    path = tmp_path / "controller.mjs"
    path.write_text(HEAD + top + STEP.format(body=indented))
    return str(path)


def flight(provider: str, path: str, budget=FAST) -> dict:
    graded = grade(GradeRequest(path, "easy", [SEED], provider, budget=budget))
    assert not graded.refused
    return graded.document()["flights"][0]


def test_javascript_reading_the_simulator_and_a_seed_file_by_host_path_finds_nothing(
        provider, tmp_path):
    seed_file = tmp_path / "held-out.txt"
    seed_file.write_text("4111111111\n")
    paths = [str(REPO / "plimsoll_sim" / "generator.py"), str(seed_file), "/root"]
    # Docker gives a container an /etc/hostname of its own: it may be read, never the host's.
    body = f"""
const out = [];
for (const p of {paths!r}) {{
  try {{
    out.push(p + " READ " + fs.readFileSync(p).length);
  }} catch (e) {{
    out.push(p + " blocked " + e.code);
  }}
}}
try {{
  out.push("hostname " + fs.readFileSync("/etc/hostname", "utf8").trim());
}} catch (e) {{
  out.push("hostname blocked");
}}
throw new Error(out.join("; "));
"""
    f = flight(provider, controller(tmp_path, body))
    assert f["reason"] == "controller_error"
    assert " READ " not in f["detail"]
    assert f["detail"].count("blocked") >= 3
    assert f"hostname {socket.gethostname()}" not in f["detail"]


def test_javascript_tcp_socket_to_host_loopback_reaches_nothing(provider, tmp_path):
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
    # node's sockets are asynchronous: the module connects at import (top-level await).
    top = f"""
const seen = await new Promise((resolve) => {{
  const s = net.connect({{ host: "127.0.0.1", port: {port} }});
  s.setTimeout(2000, () => {{ s.destroy(); resolve("blocked timeout"); }});
  s.on("connect", () => {{ s.destroy(); resolve("CONNECTED"); }});
  s.on("error", (e) => resolve("blocked " + e.code));
}});
"""
    try:
        f = flight(provider, controller(tmp_path, "throw new Error(seen);", top=top))
    finally:
        done.set()
        t.join(5)
        server.close()
    assert f["reason"] == "controller_error"
    assert "blocked" in f["detail"] and "CONNECTED" not in f["detail"]
    assert not accepted


def test_javascript_process_bomb_is_contained(provider, tmp_path):
    body = """
for (;;) {
  try {
    child_process.spawn(process.execPath, ["-e", "for (;;) {}"]).on("error", () => {});
  } catch (e) {}
}
"""
    started = time.monotonic()
    f = flight(provider, controller(tmp_path, body))
    assert f["reason"] in ("budget", "crash", "timeout_wall")
    assert time.monotonic() - started < 120


def test_javascript_8_gb_of_allocations_fail_inside(provider, tmp_path):
    body = """
const kept = [];
for (let i = 0; i < 32; i++) {
  const b = new Uint8Array(256 * 1024 * 1024);
  b.fill(1);
  kept.push(b);
}
throw new Error("ALLOCATED " + kept.length);
"""
    f = flight(provider, controller(tmp_path, body))
    assert f["reason"] in ("controller_error", "crash", "budget")
    assert "ALLOCATED" not in f["detail"]


def test_javascript_spinning_in_step_is_stopped_by_the_cpu_budget(provider, tmp_path):
    f = flight(provider, controller(tmp_path, "for (;;) {}"))
    assert f["reason"] == "budget"
    assert "CPU" in f["detail"]


def test_javascript_spinning_at_import_is_stopped_by_the_start_up_budget(provider, tmp_path):
    path = controller(tmp_path, "return null;", top="for (;;) {}\n")
    f = flight(provider, path, budget=FAST._replace(startup_s=3.0))
    assert f["reason"] == "budget"
    assert "start-up" in f["detail"]


def test_javascript_writing_into_its_own_code_folder_is_refused(provider, tmp_path):
    body = """
const out = [];
for (const p of ["/controller/controller.mjs", "/controller/new.mjs", "/plimsoll/runner.mjs",
                 "/x"]) {
  try {
    fs.appendFileSync(p, "// changed");
    out.push(p + " WROTE");
  } catch (e) {
    out.push(p + " blocked " + e.code);
  }
}
throw new Error(out.join("; "));
"""
    path = controller(tmp_path, body)
    before = Path(path).read_bytes()
    f = flight(provider, path)
    assert "WROTE" not in f["detail"] and f["detail"].count("blocked") == 4
    assert Path(path).read_bytes() == before


def test_javascript_garbage_on_the_protocol_channel_ends_the_flight_as_protocol(
        provider, tmp_path):
    body = """
for (let fd = 3; fd < 12; fd++) {
  try {
    fs.writeSync(fd, "garbage, not JSON\\n");
  } catch (e) {}
}
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30000);
"""
    f = flight(provider, controller(tmp_path, body))
    assert f["reason"] == "protocol"
    assert "malformed output" in f["detail"]


def test_javascript_blocking_forever_is_a_hang_bounded_by_the_wall_clock(provider, tmp_path):
    body = "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3600000);"
    f = flight(provider, controller(tmp_path, body), budget=FAST._replace(wall_tick_s=2.0))
    assert f["reason"] == "timeout_wall"


def test_javascript_early_exit_is_a_crash(provider, tmp_path):
    f = flight(provider, controller(tmp_path, "process.exit(3);"))
    assert f["reason"] == "crash"
