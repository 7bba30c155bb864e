"""Rebuild sessions against a real scripted chat-completions server on 127.0.0.1: tool-call errors
the session survives, the budget, rate limits, the workspace's rules, and the tripwire telling
what the harness sent from what the model wrote itself. None of these flies (no sandbox)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from kit.chat_server import (
    Answer,
    ChatServer,
    Received,
    completion_bytes,
    rate_limited,
    raw,
    reflect,
    text,
    tool_call,
    tool_calls,
)
from kit.model import carries_key
from kit.squeeze import KEY

import plimsoll_sim as sim
from plimsoll_ci.grading import fresh
from plimsoll_ci.model import ModelConfig
from plimsoll_ci.model.session import Budget
from plimsoll_ci.squeeze import brief as brief_mod
from plimsoll_ci.squeeze import rebuild, sandboxed, wall
from plimsoll_ci.squeeze.workspace import Refused, Workspace

PRACTICE = tuple(sim.PRACTICE_SEEDS)


def setting(tmp_path: Path, url: str, max_tokens: int = 100_000, model: dict | None = None,
            **changes) -> rebuild.Setting:
    given = {"timeout": 5.0, "retries": 1, "backoff": 0.01, "max_wait": 2.0, **(model or {})}
    config = ModelConfig(base_url=url, model="scripted", max_tokens=max_tokens, **given)
    (tmp_path / "work").mkdir(parents=True, exist_ok=True)
    secrets = wall.seal(PRACTICE, fresh.draw(8))
    base = rebuild.Setting(config, {"OPENAI_API_KEY": KEY}, Budget(max_tokens), secrets, "hard",
                           tmp_path / "requests", tmp_path / "work", "process", 8, 2)
    return base._replace(**changes)


SPEC = rebuild.Spec("honest", 1, "rebuild", "weigh the drone, PI loop", "0" * 64)


def tool_results(server: ChatServer, request: int) -> list[str]:
    return [m["content"] for m in server.chat_requests[request].json["messages"]
            if m["role"] == "tool"]


def test_a_malformed_call_an_unknown_tool_and_a_refused_write_get_errors_and_it_goes_on(tmp_path):
    script = [tool_calls([("write_file", "{not json"), ("shell", {"cmd": "ls"}),
                          ("write_file", {"path": "../escape.py", "content": "x"}),
                          ("write_file", {"path": "notes.txt", "content": "gains 3.5"})]),
              text("done")]
    with ChatServer(script) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url))
    first, second, third, fourth = tool_results(server, 1)
    assert first.startswith("error: the arguments are not valid JSON")
    assert second.startswith("error: unknown tool 'shell'; the tools are write_file, run_code, fly")
    assert third.startswith("error: path '../escape.py': .. is not allowed")
    assert fourth == "wrote notes.txt (9 bytes)"
    assert [c["ok"] for c in done.doc["tools"]] == [False, False, False, True]
    assert done.doc["ended"] == "answered" and done.doc["turns"] == 2
    assert done.doc["verdict"] == "no_controller"  # it never wrote controller.py
    assert not (tmp_path / "escape.py").exists()


def test_the_budget_spent_mid_session_stops_it_as_budget(tmp_path):
    script = [tool_call("write_file", {"path": "controller.py", "content": "x = 1"},
                        usage=(40, 20)),
              tool_call("write_file", {"path": "a.py", "content": "y = 2"}, usage=(40, 20)),
              text("never asked")]
    with ChatServer(script) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url, max_tokens=100))
    assert len(server.chat_requests) == 2  # the third request is never sent
    assert (done.doc["ended"], done.doc["verdict"], done.doc["tokens"]) == ("budget", "stopped",
                                                                            120)
    assert done.predicate_fields["tokens"] == 120


def test_a_429_then_success_goes_on_and_a_lasting_429_stops_it_as_rate_limit(tmp_path):
    with ChatServer([rate_limited(0), text("done")]) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path / "a", server.url))
    assert done.doc["ended"] == "answered" and done.doc["requests"] == 2
    assert len(server.chat_requests) == 2
    with ChatServer([rate_limited(0), rate_limited(0)]) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path / "b", server.url))
    assert (done.doc["ended"], done.doc["verdict"]) == ("rate_limit", "stopped")


def test_max_turns_ends_a_session_that_never_stops_calling(tmp_path):
    script = [tool_call("write_file", {"path": "controller.py", "content": f"x = {n}"})
              for n in range(3)]
    with ChatServer(script) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url, max_turns=3))
    assert (done.doc["ended"], done.doc["turns"], done.doc["verdict"]) == ("max_turns", 3,
                                                                           "graded")


def test_a_model_writing_practice_seeds_is_refused_by_the_workspace_scan_not_the_tripwire(
        tmp_path):
    seeds = "\n".join(str(s) for s in PRACTICE[:4])
    script = [tool_call("write_file", {"path": "controller.py", "content": "SEEDS = 0\n"}),
              tool_call("write_file", {"path": "flights.txt", "content": seeds}),
              tool_call("run_code", {"code": ""}),  # refused: its result echoes nothing
              text("done")]
    with ChatServer(script) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url))
    assert done.doc["verdict"] == "refused" and done.doc["controller"] is None
    assert done.doc["workspace"]["carries"] == [f"flights.txt:{n} practice:{n}"
                                                for n in range(1, 5)]
    # the model wrote them itself: later requests carry its own words back, which is no leak
    assert done.check.hits == [] and done.check.model_wrote == [f"practice:{n}"
                                                                 for n in range(1, 5)]
    assert done.doc["wall"] == {"hits": [], "model_wrote": done.check.model_wrote}


def test_a_brief_carrying_a_practice_seed_is_a_tripwire_hit_naming_the_request(tmp_path):
    def leaky(given, secrets):
        system, user = brief_mod.brief(given)
        return system, user + f"\nA flight that went well: seed {secrets.practice[2]}."

    with ChatServer([text("done")]) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url,
                                                 harness=rebuild.Harness(brief=leaky)))
    assert done.check.hits == [wall.Hit("000001.request.body", "/messages/1/content",
                                        "practice:3")]
    assert str(PRACTICE[2]) not in json.dumps(done.doc)


def test_smoke_seeds_that_are_sealed_values_stop_the_session_before_any_request(tmp_path):
    harness = rebuild.Harness(smoke=lambda n, secrets: secrets.practice[:n])
    with ChatServer([]) as server:
        with pytest.raises(rebuild.WallBreach) as e:
            rebuild.run_session(SPEC, setting(tmp_path, server.url, harness=harness))
    assert server.chat_requests == []
    assert "practice:1, practice:2" in str(e.value)
    assert str(PRACTICE[0]) not in str(e.value)


def test_smoke_seeds_are_drawn_fresh_and_are_never_sealed_values():
    secrets = wall.seal(PRACTICE, fresh.draw(64))
    draws = [wall.draw_smoke(4) for _ in range(20)]
    assert all(len(set(d)) == 4 for d in draws) and len(set(draws)) == 20
    assert all(not wall.check_smoke(d, secrets.sealed) for d in draws)
    assert wall.check_smoke((secrets.fresh.seeds[5],), secrets.sealed) == ["fresh:6"]


@pytest.mark.parametrize("path, words", [
    ("/etc/passwd", "relative to the workspace"),
    ("a/../../b.py", ".. is not allowed"),
    (".hidden", "plain names"),
    ("a/b/c/d/e.py", "at most 4 plain names"),
    ("a\\b.py", "with / between"),
    ("", "non-empty string"),
    (7, "non-empty string"),
])
def test_write_file_keeps_to_the_workspace(tmp_path, path, words):
    space = Workspace(tmp_path / "ws")
    with pytest.raises(Refused) as e:
        space.write(path, "x")
    assert words in str(e.value)
    assert space.files() == {}


def test_write_file_bounds_sizes_and_keeps_files_and_folders_apart(tmp_path):
    space = Workspace(tmp_path / "ws")
    assert space.write("lib/gains.py", "K = 1") == "wrote lib/gains.py (5 bytes)"
    with pytest.raises(Refused, match="a file and a folder"):
        space.write("lib", "x")
    with pytest.raises(Refused, match="at most 262144"):
        space.write("big.txt", "x" * (256 * 1024 + 1))
    assert space.write("./controller.py", "x") == "wrote controller.py (1 bytes)"
    assert space.has_controller() and sorted(space.files()) == ["controller.py", "lib/gains.py"]


def test_parallel_sessions_share_the_budget_and_come_back_in_plan_order(tmp_path):
    from plimsoll_ci.squeeze import sessions

    gate = threading.Event()

    def slow(got):
        gate.wait(5)
        return text("done")

    specs = [rebuild.Spec("control", n, "control", None, None) for n in (1, 2, 3)]
    with ChatServer([slow] * 3) as server:
        base = setting(tmp_path, server.url)
        found = sessions.run_all(specs, base, 2, lambda s: gate.set(), lambda d: None)
    assert [d.spec.index for d in found] == [1, 2, 3]  # plan order, whatever finished first
    assert sum(d.doc["tokens"] for d in found) == base.budget.spent == 90


# --- the session's bounds: its wall clock, tool calls per reply and per session ----------------

def test_sleeping_run_code_calls_in_one_reply_cannot_hold_a_session_past_its_wall_clock(tmp_path):
    import time

    sleeper = ("run_code", {"code": "import time\ntime.sleep(30)"})
    with ChatServer([tool_calls([sleeper] * 3), text("never asked")]) as server:
        start = time.monotonic()
        done = rebuild.run_session(SPEC, setting(
            tmp_path, server.url, model={"session_seconds": 2.0},
            code=sandboxed.Bounds(cpu_s=5.0, wall_s=5.0)))
        took = time.monotonic() - start
    assert took < 4.5, took  # not 3 x 5 s of sleeping sandboxes
    assert done.doc["ended"] == "time_limit" and len(server.chat_requests) == 1
    assert [c["name"] for c in done.doc["tools"]] == ["run_code"] * 3
    assert [c["ok"] for c in done.doc["tools"]][1:] == [False, False]  # the time was up
    assert done.doc["limits"]["session_seconds"] == 2


def test_a_reply_with_more_tool_calls_than_the_cap_runs_only_the_cap_and_says_so(tmp_path):
    writes = [("write_file", {"path": f"f{n}.py", "content": "x = 1"}) for n in range(5)]
    with ChatServer([tool_calls(writes), text("done")]) as server:
        done = rebuild.run_session(SPEC, setting(
            tmp_path, server.url, model={"calls_per_reply": 2, "calls_per_session": 10}))
    assert sorted(done.files) == ["f0.py", "f1.py"]
    assert done.doc["dropped_calls"] == 3 and len(done.doc["tools"]) == 2
    results = tool_results(server, 1)
    assert results[2:] == ["error: not run: at most 2 tool calls of one reply are run (this "
                           f"was call {n} of 5)" for n in (3, 4, 5)]
    assert done.doc["ended"] == "answered"
    assert done.doc["limits"] == {"session_seconds": 1800, "calls_per_reply": 2,
                                  "calls_per_session": 10, "request_timeout": 5,
                                  "retries": 1, "reply_bytes": 64 * 1024 * 1024}


def test_a_session_whose_tool_calls_are_used_up_ends_and_its_controller_is_graded(tmp_path):
    write = ("write_file", {"path": "controller.py", "content": "x = 1"})
    with ChatServer([tool_calls([write] * 2), tool_calls([write] * 2), text("never")]) as server:
        done = rebuild.run_session(SPEC, setting(
            tmp_path, server.url, model={"calls_per_reply": 8, "calls_per_session": 3}))
    assert (done.doc["ended"], done.doc["verdict"]) == ("tool_calls", "graded")
    assert len(done.doc["tools"]) == 3 and done.doc["dropped_calls"] == 1
    assert len(server.chat_requests) == 2


# --- an endpoint that echoes the key ------------------------------------------------------------

@pytest.mark.parametrize("form", ["plain", "json", "base64"])
def test_a_key_the_endpoint_echoes_is_in_no_tool_name_file_record_or_recording(tmp_path, form):
    def echoing(got: Received) -> Answer:
        echo = reflect(got, form)
        write = ('{\\"path\\":\\"controller.py\\",\\"content\\":\\"# ' + echo
                 + '\\"}')
        return raw(completion_bytes(f"sent {echo}", [("write_file", write), (echo, "{}")]))

    with ChatServer([echoing, text("done")]) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url))
    assert done.doc["verdict"] == "graded"
    assert b"[redacted]" in done.files["controller.py"]
    assert "[redacted]" in done.doc["tools"][1]["name"]
    assert carries_key(json.dumps(done.doc)) == []
    assert carries_key(json.dumps(done.predicate_fields)) == []
    for path in (tmp_path / "requests").rglob("*"):
        if path.is_file():
            assert carries_key(path.read_bytes()) == [], path
    for data in done.files.values():
        assert carries_key(data) == []


def test_an_answer_arriving_after_the_session_ended_never_changes_its_recording(tmp_path):
    import time

    from kit.chat_server import slow

    with ChatServer([slow(text("late"), delay=2.0)]) as server:
        done = rebuild.run_session(SPEC, setting(tmp_path, server.url,
                                                 model={"timeout": 0.5, "retries": 0}))
        assert done.doc["ended"] == "error" and "no answer within 0.5 s" in done.doc["error"]
        folder = tmp_path / "requests" / rebuild.folder_name(SPEC)
        before = sorted(p.name for p in folder.iterdir())
        time.sleep(2.5)  # the proxy got its answer from the upstream meanwhile
    assert sorted(p.name for p in folder.iterdir()) == before
    assert wall.manifest(folder) == (done.doc["recording"]["requests"],
                                     done.doc["recording"]["sha256"])
