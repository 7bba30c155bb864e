"""`build: N`: rebuilds made through a scripted model on 127.0.0.1, flown and graded in gVisor,
signed beside the gradings, and the wall checked; the key never shows."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.chat_server import (
    Answer,
    ChatServer,
    Received,
    rate_limited,
    raw,
    reflect,
    text,
    tool_call,
    tool_calls,
    trickled,
)
from kit.cli import run_process
from kit.squeeze import CLIMB, HONEST, KEY, assistant_turns, builder, need_gvisor

import plimsoll_sim as sim
from plimsoll_ci.attest import keys
from plimsoll_ci.attest.bundle import verify_bundle
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh
from plimsoll_ci.model import ModelConfig
from plimsoll_ci.model.session import Budget
from plimsoll_ci.squeeze import job as job_mod
from plimsoll_ci.squeeze import progress, rebuild, wall
from plimsoll_ci.squeeze import run as run_mod
from plimsoll_ci.squeeze.grader import Setup

# Seeds of the hard course the honest controller lands (flown in-process, `sim.fly.fly`)
LANDED = (8742514865654379576, 3641603986678484279, 445363685911929936)
JOB = """\
course: hard
fresh: {count: 8, sets: 1}
loops:
  honest:
    controller: loop.py
    recipe: honest.txt
    build: 2
  seeder:
    controller: loop2.py
    recipe: seeder.txt
    rebuilds: [climb.py]
    build: 1
control: {build: 1}
sessions: {max_turns: 8, smoke: 2}
"""


def job_folder(folder: Path, text_: str = JOB, honest_recipe: str = "Weigh the drone, PI loop.") \
        -> Path:
    folder.mkdir(parents=True)
    (folder / "loop.py").write_text(HONEST)
    (folder / "loop2.py").write_text(HONEST)
    (folder / "climb.py").write_text(CLIMB)
    (folder / "honest.txt").write_text(honest_recipe + "\n")
    (folder / "seeder.txt").write_text("Remember the practice flights.\n")
    (folder / "squeeze.yaml").write_text(text_)
    return folder / "squeeze.yaml"


def scripted_model() -> tuple[list, set]:
    """One answer function for every session: honest rebuilds build and fly; the seeder's model
    writes the practice seeds it "remembers"; the control session is rate-limited once first."""
    honest = builder()
    seeder = builder(HONEST, {"flights.txt": "\n".join(map(str, sim.PRACTICE_SEEDS))})
    limited: set = set()

    def answer(got: Received) -> Answer:
        first_user = got.json["messages"][1]["content"]
        if "no recipe" in first_user:
            if not limited:
                limited.add(1)
                return rate_limited(0)
            return honest(got)
        return seeder(got) if "Remember the practice" in first_user else honest(got)

    return [answer] * 60, limited


def test_an_honest_rebuild_writes_runs_and_flies_its_controller_in_gvisor(tmp_path, gvisor):
    from plimsoll_sim.course import course
    from plimsoll_sim.fly import fly

    honest: dict = {}
    exec(compile(HONEST, "honest.py", "exec"), honest)  # (trusted: the repository's own)
    flown, _ = fly(lambda info: honest["Controller"](info), LANDED, course("hard"))
    assert all(r.landed for r in flown)  # the smoke seeds below are seeds it lands
    script = [tool_call("write_file", {"path": "controller.py", "content": HONEST}),
              tool_call("run_code", {"code": "import controller, os\n"
                                              "print('has', hasattr(controller, 'Controller'))\n"
                                              "print(sorted(os.listdir('.')))"}),
              tool_call("fly", {}),
              text("the controller is done")]
    (tmp_path / "work").mkdir()
    with ChatServer(script) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=30.0, retries=1, backoff=0.01)
        # fixed smoke seeds the honest controller lands (the harness draws them fresh, and it
        # lands about 7 flights in 8: three drawn ones left one landed in about 1 run of 25)
        setting = rebuild.Setting(config, {"OPENAI_API_KEY": KEY}, Budget(10_000),
                                  wall.seal(tuple(sim.PRACTICE_SEEDS), fresh.draw(8)), "hard",
                                  tmp_path / "requests", tmp_path / "work", gvisor, 8, 3,
                                  rebuild.Harness(smoke=lambda n, _secrets: LANDED[:n]))
        done = rebuild.run_session(rebuild.Spec("honest", 1, "rebuild", "PI loop", "0" * 64),
                                   setting)
    results = [m["content"] for m in server.chat_requests[3].json["messages"]
               if m["role"] == "tool"]
    assert results[0] == f"wrote controller.py ({len(HONEST.encode())} bytes)"
    assert results[1].startswith("exit code 0") and "has True" in results[1]
    assert "['controller.py']" in results[1]
    fly = results[2].splitlines()
    assert fly[0].startswith("fly: ") and fly[0].endswith("of 3 flights landed (hard course)")
    assert [line.split(": ")[0] for line in fly[1:]] == ["smoke:1", "smoke:2", "smoke:3"]
    assert int(fly[0].split()[1]) >= 2  # the honest controller lands them (a budget may cut one)
    assert (done.doc["verdict"], done.doc["ended"]) == ("graded", "answered")
    assert done.doc["controller"] == "built/honest/1"
    assert [c["name"] for c in done.doc["tools"]] == ["write_file", "run_code", "fly"]
    assert done.doc["recording"]["requests"] == 4 and done.check.hits == []


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, ChatServer]:
    need_gvisor()
    root = tmp_path_factory.mktemp("build")
    job = job_folder(root / "job")
    script, limited = scripted_model()
    env = {**os.environ, "SCRIPTED_KEY": KEY}
    env.pop("OPENAI_API_KEY", None)
    with ChatServer(script, key=KEY) as server:
        r = run_process("squeeze", "run", str(job), "--out", str(root / "out"), "--jobs", "2",
                        "--base-url", server.url, "--model", "scripted", "--api-key-env",
                        "SCRIPTED_KEY", "--max-tokens", "100000", "--max-retries", "2",
                        timeout=900, env=env, inherit=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert limited, "the control session was never rate-limited"
    return root / "out", r, server


def test_built_rebuilds_are_graded_and_refused_ones_counted_apart(built):
    out, r, _ = built
    result = json.loads((out / "result.json").read_text())
    honest, seeder = result["loops"]
    assert honest["rebuilds"]["count"] == 2 and seeder["rebuilds"]["count"] == 1  # climb only
    assert honest["sessions"] | {"note": ""} == {
        "count": 2, "graded": 2, "refused": 0, "no_controller": 0, "tokens": 180, "note": "",
        "stopped": {"budget": 0, "rate_limit": 0, "error": 0}}
    assert (seeder["sessions"]["refused"], seeder["sessions"]["graded"]) == (1, 0)
    assert "left out of the medians" in seeder["sessions"]["note"]
    assert result["control"]["count"] == 1 and result["control"]["sessions"]["graded"] == 1
    assert sorted(p.relative_to(out).as_posix() for p in (out / "built").rglob("*.py")) == [
        "built/control/1/controller.py", "built/honest/1/controller.py",
        "built/honest/2/controller.py"]  # the refused workspace never reaches the out folder
    assert "rebuild sessions: 2 of 2 graded" in r.stdout
    assert "## Rebuilds made through a model" in (out / "report.md").read_text()
    per = {s["session"]: s for s in json.loads((out / "run.json").read_text())["sessions"]
           ["per_session"]}
    assert per["seeder/1"]["verdict"] == "refused" and per["control/1"]["verdict"] == "graded"


def test_the_session_records_are_signed_beside_the_gradings_and_verify(built):
    out, _, _ = built
    public = keys.load_public_key(out / "harness.pub")
    report = verify_bundle(out / "bundle.intoto.jsonl", public)
    assert report.ok, report.problems
    kinds = [r.kind for r in report.records]
    assert kinds == ["rebuild-session"] * 4 + ["grading"] * 6
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "verify", str(out),
                        "--pub", str(out / "harness.pub")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified (6 signed gradings and 4 rebuild sessions;" in r.stdout
    line = (out / "bundle.intoto.jsonl").read_text().splitlines()[2]
    session = json.loads(line)["result"]
    assert session["session"] == {"group": "seeder", "index": 1, "role": "rebuild"}
    assert session["verdict"] == "refused" and session["workspace"]["carries"][0].endswith(
        "practice:1")
    assert all(str(s) not in line for s in sim.PRACTICE_SEEDS)


def test_every_request_went_through_the_recorder_and_the_key_is_nowhere(built):
    out, r, server = built
    assert KEY not in r.stdout + r.stderr
    for p in out.rglob("*"):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p
    recorded = sorted((out / "requests").glob("*/*.request.json"))
    assert len(recorded) == len(server.chat_requests)  # the 429 included
    for p in recorded:
        doc = json.loads(p.read_text())
        assert ["Authorization", "[redacted]"] in doc["headers"]
    assert all(req.headers["authorization"] == f"Bearer {KEY}" for req in server.chat_requests)


def test_a_recipe_carrying_a_fresh_seed_is_a_tripwire_hit_that_fails_the_run(tmp_path):
    drawn = fresh.draw(8)
    job = job_mod.load(job_folder(
        tmp_path / "job", JOB.replace("    rebuilds: [climb.py]\n    build: 1\n",
                                      "    rebuilds: [climb.py]\n"),
        honest_recipe=f"Practise on flight {drawn.seeds[3]} first."))
    err = io.StringIO()
    with ChatServer([text("nothing to build")] * 10) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=10.0, retries=1)
        outcome = run_mod.run(job, run_mod.Options(
            tmp_path / "out", 1, Setup("gvisor"), model=run_mod.Model(config, {
                "OPENAI_API_KEY": KEY})), progress.Plain(err), fresh_set=drawn)
    assert (outcome.status, outcome.exit_code, outcome.result) == ("breached", 1, None)
    said = err.getvalue()
    assert "tripwire: session honest/1 request requests/honest-1/000001.request.body at " \
           "/messages/1/content: sealed entry fresh:4" in said
    assert "session honest/2" in said and "session control/1" not in said.split("tripwire")[-1]
    assert str(drawn.seeds[3]) not in said
    account = json.loads((tmp_path / "out" / "run.json").read_text())
    assert account["status"] == "breached" and not (tmp_path / "out" / "result.json").exists()
    report = verify_bundle(tmp_path / "out" / "bundle.intoto.jsonl",
                           keys.load_public_key(tmp_path / "out" / "harness.pub"))
    assert report.ok and [r.kind for r in report.records] == ["rebuild-session"] * 3


def test_a_job_that_builds_needs_the_model_flags(tmp_path):
    job = job_folder(tmp_path / "job")
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    assert f"{job} line 4: loops.honest.build: rebuilds made through a model need" in r.stderr
    assert not (tmp_path / "out").exists()
    env = {**os.environ, "OPENAI_API_KEY": ""}
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                        "--out", str(tmp_path / "out"), "--base-url", "http://127.0.0.1:9/v1",
                        "--model", "m", "--max-tokens", "1000"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 2 and "OPENAI_API_KEY is not set" in r.stderr


def test_a_loop_whose_sessions_leave_nothing_to_grade_gets_no_verdict(tmp_path):
    job = job_mod.load(job_folder(tmp_path / "job", JOB.replace(
        "    rebuilds: [climb.py]\n    build: 1\n", "    rebuilds: [climb.py]\n")))

    def chatter(got: Received) -> Answer:
        return text("I would rather not write code.") if assistant_turns(got) < 1 else text("")

    err = io.StringIO()
    with ChatServer([chatter] * 10) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=10.0, retries=1)
        outcome = run_mod.run(job, run_mod.Options(
            tmp_path / "out", 1, Setup("gvisor"), model=run_mod.Model(config, {
                "OPENAI_API_KEY": KEY})), progress.Plain(err))
    assert (outcome.status, outcome.exit_code) == ("no_rebuilds", 1)
    assert "loops.honest: none of its 2 rebuild sessions left a controller to grade " \
           "(no_controller 2)" in err.getvalue()


def _records(bundle_path: Path) -> tuple[list, list]:
    from plimsoll_ci.attest import canonical
    from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE

    made, graded = [], []
    for line in bundle_path.read_bytes().split(b"\n")[:-2]:
        doc = canonical.loads(line)
        statement = canonical.loads(canonical.b64decode(doc["envelope"]["payload"]))
        kind = made if statement["predicateType"] == SESSION_PREDICATE_TYPE else graded
        kind.append((doc["result"], statement["predicate"]))
    return made, graded


def _reseal(out: Path, made: list, graded: list, signer) -> list[str]:
    import shutil

    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE, result_digest
    from plimsoll_ci.squeeze.verify import verify

    copy = shutil.copytree(out, out.parent / f"{out.name}-{len(list(out.parent.iterdir()))}")
    (copy / "bundle.intoto.jsonl").unlink()
    for result, predicate in made + graded:
        predicate["result"]["sha256"] = result_digest(result)
    if made:
        bundle.append_runs(copy / "bundle.intoto.jsonl", made, signer, SESSION_PREDICATE_TYPE)
    if graded:
        bundle.append_runs(copy / "bundle.intoto.jsonl", graded, signer)
    return verify(copy, signer.public).problems


def test_even_the_key_holder_cannot_drop_a_session_or_restate_what_it_did(tmp_path, gvisor):
    import copy as copy_mod

    job = job_mod.load(job_folder(tmp_path / "job", JOB.replace("    build: 2\n", "    build: 1\n")
                                  .replace("    rebuilds: [climb.py]\n    build: 1\n",
                                           "    rebuilds: [climb.py]\n")
                                  .replace("control: {build: 1}\n", "")))
    signer = keys.write_keypair(tmp_path / "ci")
    with ChatServer([builder()] * 10) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=30.0, retries=1)
        outcome = run_mod.run(job, run_mod.Options(
            tmp_path / "out", 1, Setup(gvisor), key_file=str(tmp_path / "ci.key"),
            model=run_mod.Model(config, {"OPENAI_API_KEY": KEY})), progress.Plain(io.StringIO()))
    assert outcome.status == "done"
    out = tmp_path / "out"
    made, graded = _records(out / "bundle.intoto.jsonl")
    assert len(made) == 1 and len(graded) == 4  # honest: loop + built/honest/1; seeder: loop+climb
    assert _reseal(out, made, graded, signer) == []
    # The session dropped (its rebuild then looks imported from nowhere):
    assert any("no record of session honest/1" in p
               for p in _reseal(out, [], copy_mod.deepcopy(graded), signer))
    # Fewer tokens stated in the document than were signed for:
    fewer = copy_mod.deepcopy(made)
    fewer[0][0]["tokens"] -= 1
    assert any("session honest/1: its signed tokens is not what its document says" in p
               for p in _reseal(out, fewer, copy_mod.deepcopy(graded), signer))
    # The built rebuild's grading dropped while its session says it was graded:
    kept = [g for g in copy_mod.deepcopy(graded)
            if g[0]["squeeze"]["grading"]["controller"] != "built/honest/1"]
    assert any("no record for honest/rebuild built/honest/1" in p
               for p in _reseal(out, copy_mod.deepcopy(made), kept, signer))
    # The session said to have written other files than the ones graded:
    other = copy_mod.deepcopy(made)
    other[0][0]["workspace"]["files"]["controller.py"] = "0" * 64
    assert any("graded other files than its session's workspace" in p
               for p in _reseal(out, other, copy_mod.deepcopy(graded), signer))


def test_sigterm_during_the_sessions_stops_every_sandbox_and_signs_nothing(tmp_path, gvisor):
    import signal
    import tempfile
    import time

    job = job_folder(tmp_path / "job")
    # the sandboxes' folders go here: a folder the sandbox user can traverse, as /tmp is
    spool = Path(tempfile.mkdtemp(prefix="plimsoll-sigterm-test-", dir="/tmp"))
    spool.chmod(0o755)
    script = [tool_call("run_code", {"code": "import time\ntime.sleep(120)"})] * 10
    env = {**os.environ, "SCRIPTED_KEY": KEY, "TMPDIR": str(spool)}
    with ChatServer(script) as server:
        proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                                 "--out", str(tmp_path / "out"), "--jobs", "2", "--base-url",
                                 server.url, "--model", "scripted", "--api-key-env",
                                 "SCRIPTED_KEY", "--max-tokens", "100000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        deadline = time.monotonic() + 120
        while len(server.chat_requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # both sessions are inside run_code's sandbox now
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    assert "interrupted during the rebuild sessions" in err
    account = json.loads((tmp_path / "out" / "run.json").read_text())
    assert account["status"] == "interrupted"
    assert not (tmp_path / "out" / "bundle.intoto.jsonl").exists()
    left = subprocess.run(["pgrep", "-f", str(spool)], capture_output=True, text=True).stdout
    assert left == "", f"processes of the run still alive: {left}"
    assert list(spool.iterdir()) == []
    spool.rmdir()


def test_a_build_run_gives_the_same_result_for_any_jobs(tmp_path, gvisor):
    small = ("course: hard\nfresh: {count: 4, sets: 1}\nloops:\n  honest:\n"
             "    controller: loop.py\n    recipe: honest.txt\n    build: 2\ncontrol: {build: 1}\n"
             "sessions: {max_turns: 6, smoke: 1}\n")
    job = job_mod.load(job_folder(tmp_path / "job", small))
    drawn, more = fresh.draw(4), [fresh.draw(4)]
    results = []
    with ChatServer([builder()] * 40) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=100_000,
                             timeout=30.0, retries=1)
        for jobs in (1, 2):
            out = tmp_path / f"out-{jobs}"
            outcome = run_mod.run(job, run_mod.Options(
                out, jobs, Setup(gvisor), model=run_mod.Model(config, {"OPENAI_API_KEY": KEY})),
                progress.Plain(io.StringIO()), fresh_set=drawn, more_sets=more)
            assert outcome.status == "done"
            results.append((out / "result.json").read_bytes())
    assert results[0] == results[1]
    assert json.loads(results[0])["loops"][0]["sessions"]["graded"] == 2


def test_a_recipe_a_model_would_be_sent_that_carries_a_practice_seed_is_refused_first(tmp_path):
    job = job_mod.load(job_folder(tmp_path / "job", honest_recipe=(
        f"Flight {sim.PRACTICE_SEEDS[0]} is the hardest.")))
    with ChatServer([]) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=1000)
        with pytest.raises(BadInput) as e:
            run_mod.run(job, run_mod.Options(tmp_path / "out", 1, Setup("process"),
                                             model=run_mod.Model(config, {"OPENAI_API_KEY": KEY})),
                        progress.Plain(io.StringIO()))
    assert "recipe honest.txt carries practice:1; it would cross the wall" in str(e.value)
    assert e.value.exit_code == 2
    assert str(sim.PRACTICE_SEEDS[0]) not in str(e.value)
    assert server.chat_requests == [] and not (tmp_path / "out").exists()


# --- an endpoint that reflects the key, absurd usage, a refusal, a trickle ----------------------

ONE_REBUILD = """\
course: hard
fresh: {count: 4, sets: 1}
loops:
  honest:
    controller: loop.py
    recipe: honest.txt
    build: 1
sessions: {max_turns: 4, smoke: 1}
"""
JSON_ECHO = "JSON-ESCAPED-ECHO-HERE"


def _echoing(got: Received) -> Answer:
    """Writes controller.py with the header it got in a comment (plain, base64 and JSON-escaped
    in the reply's bytes), calls a tool named after it, then answers with it."""
    plain, b64 = reflect(got, "plain"), reflect(got, "base64")
    if assistant_turns(got) == 0:
        content = f"{HONEST}\n# {plain}\n# {b64}\n# {JSON_ECHO}\n"
        body = tool_calls([("write_file", {"path": "controller.py", "content": content}),
                           (plain, {})]).body
    else:
        body = text(f"done; you sent {plain} / {b64} / {JSON_ECHO}").body
    return raw(body.replace(JSON_ECHO.encode(), reflect(got, "json").encode()))


def _no_reflection_under(out: Path) -> None:
    from kit.model import carries_key

    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert carries_key(p.read_bytes()) == [], p


def test_a_key_an_echoing_endpoint_reflects_is_nowhere_in_a_runs_folder(tmp_path, gvisor):
    job = job_mod.load(job_folder(tmp_path / "job", ONE_REBUILD))
    err = io.StringIO()
    with ChatServer([_echoing] * 4) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=10.0, retries=1)
        outcome = run_mod.run(job, run_mod.Options(
            tmp_path / "out", 1, Setup("gvisor"), model=run_mod.Model(config, {
                "OPENAI_API_KEY": KEY})), progress.Plain(err))
    assert (outcome.status, outcome.exit_code) == ("done", 0), err.getvalue()[-2000:]
    out = tmp_path / "out"
    built = (out / "built" / "honest" / "1" / "controller.py").read_text()
    assert built.count("[redacted]") == 3  # plain, base64, JSON-escaped: each scrubbed
    made, _graded = _records(out / "bundle.intoto.jsonl")
    assert "[redacted]" in made[0][1]["tools"][1]["name"]
    assert list((out / "requests" / "honest-1").glob("*.body"))
    _no_reflection_under(out)
    assert KEY not in err.getvalue()


@pytest.mark.parametrize("form", ["plain", "json", "base64"])
def test_a_401_naming_the_key_stops_the_run_and_run_json_says_why_without_it(tmp_path, form):
    job = job_mod.load(job_folder(tmp_path / "job", ONE_REBUILD))

    def refused(got: Received) -> Answer:
        message = f"Incorrect API key provided: {reflect(got, form)}"
        return raw(b'{"error": {"message": "' + message.encode() + b'"}}', 401)

    with ChatServer([refused]) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=10.0, retries=1)
        with pytest.raises(BadInput, match="refused the request") as caught:
            run_mod.run(job, run_mod.Options(
                tmp_path / "out", 1, Setup("gvisor"), model=run_mod.Model(config, {
                    "OPENAI_API_KEY": KEY})), progress.Plain(io.StringIO()))
    account = json.loads((tmp_path / "out" / "run.json").read_text())
    assert account["status"] == "failed" and "HTTP 401" in account["why"][0]
    assert f"{server.url}/chat/completions" in account["why"][0]  # --base-url, not the proxy
    from kit.model import carries_key

    assert carries_key(str(caught.value)) == []
    _no_reflection_under(tmp_path / "out")


def test_an_absurd_usage_stops_the_sessions_by_the_budget_and_the_run_says_so(tmp_path):
    from plimsoll_ci.attest import canonical

    job = job_mod.load(job_folder(tmp_path / "job", ONE_REBUILD))
    err = io.StringIO()
    with ChatServer([tool_call("write_file", {"path": "a.py", "content": "x = 1"},
                               usage=(2**60, 0))] * 3) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000,
                             timeout=10.0, retries=1)
        outcome = run_mod.run(job, run_mod.Options(
            tmp_path / "out", 1, Setup("gvisor"), model=run_mod.Model(config, {
                "OPENAI_API_KEY": KEY})), progress.Plain(err))
    assert (outcome.status, outcome.exit_code) == ("no_rebuilds", 1)
    assert len(server.chat_requests) == 1  # the budget was spent by the first answer
    account = json.loads((tmp_path / "out" / "run.json").read_text())
    assert account["status"] == "no_rebuilds" and account["sessions"]["tokens"] == 2**53 - 1
    assert "budget 1" in " ".join(account["why"])
    report = verify_bundle(tmp_path / "out" / "bundle.intoto.jsonl",
                           keys.load_public_key(tmp_path / "out" / "harness.pub"))
    assert report.ok
    [(doc, predicate)] = _records(tmp_path / "out" / "bundle.intoto.jsonl")[0]
    assert (doc["ended"], doc["tokens"], predicate["tokens"]) == ("budget", 2**53 - 1,
                                                                  2**53 - 1)
    canonical.dumps(doc)


def test_sigterm_during_a_trickling_request_ends_the_run_within_seconds(tmp_path):
    import signal
    import time

    job = job_folder(tmp_path / "job", ONE_REBUILD)
    env = {**os.environ, "SCRIPTED_KEY": KEY}
    with ChatServer([trickled(text("x" * 2000), every=0.5)] * 2) as server:
        proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                                 "--out", str(tmp_path / "out"), "--base-url", server.url,
                                 "--model", "scripted", "--api-key-env", "SCRIPTED_KEY",
                                 "--max-tokens", "100000", "--request-timeout", "10",
                                 "--max-retries", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        deadline = time.monotonic() + 60
        while not server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # the reply is trickling now
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - start
    assert proc.returncode == 143, err[-2000:]
    assert took < 5, took
    account = json.loads((tmp_path / "out" / "run.json").read_text())
    assert account["status"] == "interrupted"
