"""One rebuild session: a fresh conversation with a model that builds a controller with three tools.

    done = run_session(Spec("honest", 1, "rebuild", recipe, ...), setting)

The model gets the brief (`brief.py`: the task, and the recipe or none) and exactly three tools:
`write_file` (into the session's own workspace), `run_code` (Python over a copy of the workspace
in a sandbox of its own, `sandboxed.py`) and `fly` (the workspace's `controller.py` on the
session's smoke seeds, in a grading sandbox). Arguments that are not a JSON object, an unknown tool
or a refused write get an error result and the session goes on. It ends when the model answers
without a tool call, at `max_turns`, at its wall clock (`time_limit`) or tool-call cap
(`tool_calls`; both `ModelConfig` bounds, recorded in the session's `limits`), when the budget is
spent or the endpoint keeps rate-limiting (`stopped`), or on an endpoint error. A reply's tool calls
over the per-reply cap get an error result without running, and a `run_code` call never runs past
the session's wall clock. Every request goes through a recording proxy (`wall.py`); the
recording, the workspace scan and the tripwire's verdict go into the session's record.

The parts that decide what crosses the wall (the brief, the files shipped into sandboxes, the smoke
seeds) are a `Harness`; the canary run swaps one to plant a mistake and shows it is caught.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.model import ModelClient, ModelConfig, Tool
from plimsoll_ci.squeeze import brief as brief_mod
from plimsoll_ci.squeeze import sandboxed, wall
from plimsoll_ci.squeeze.workspace import Refused, Workspace, files_digest

SESSION_FORMAT = "plimsoll-rebuild-session/1"
MAX_CODE_BYTES = 256 * 1024
TOOLS = (
    Tool("write_file", "Write a text file into your workspace (overwrites).", {
        "type": "object", "properties": {"path": {"type": "string"},
                                         "content": {"type": "string"}},
        "required": ["path", "content"]}),
    Tool("run_code", "Run Python (or JavaScript: language javascript) over a copy of your "
         "workspace in a sandbox (no network).", {
             "type": "object", "properties": {
                 "code": {"type": "string"},
                 "language": {"type": "string", "enum": ["python", "javascript"]}},
             "required": ["code"]}),
    Tool("fly", "Fly controller.py on this session's throwaway flights.",
         {"type": "object", "properties": {}}),
)
TOOL_NAMES = tuple(t.name for t in TOOLS)
ENDED_STOPPED = ("budget", "rate_limit", "error", "interrupted")
FATAL_STATUS = (401, 403, 404)  # the endpoint refuses every session alike: stop the run


def _brief(given: brief_mod.BriefInput, secrets: wall.Secrets) -> tuple[str, str]:
    return brief_mod.brief(given)  # made from public information alone


def _no_kit(secrets: wall.Secrets) -> dict[str, bytes]:
    return {}  # the sandboxes hold the model's own files and nothing else


def _smoke(count: int, secrets: wall.Secrets) -> tuple[int, ...]:
    return wall.draw_smoke(count, avoid=secrets.seeds())


class Harness(NamedTuple):
    """What the harness puts on the model's side of the wall. Each part is handed the secrets
    because a harness has them at hand: a mistake is one line away, and the canary run shows
    that such a mistake is caught."""

    brief: Callable[[brief_mod.BriefInput, wall.Secrets], tuple[str, str]] = _brief
    kit: Callable[[wall.Secrets], dict[str, bytes]] = _no_kit  # files shipped into sandboxes
    smoke: Callable[[int, wall.Secrets], tuple[int, ...]] = _smoke


class Spec(NamedTuple):
    """One session of the plan."""

    group: str  # the loop's name, or "control"
    # 1..N within the group
    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    role: str  # "rebuild" | "control"
    recipe: str | None
    recipe_sha256: str | None

    @property
    def name(self) -> str:
        """How messages and folders name it: `honest/3`."""
        return f"{self.group}/{self.index}"


class Setting(NamedTuple):
    """What every session of a run shares."""

    config: ModelConfig
    environ: Mapping[str, str] | None  # where the key is read (None: the process environment)
    budget: Any  # model.Budget shared by the run's sessions
    secrets: wall.Secrets
    course: str
    recordings: Path  # one folder per session under it
    work: Path  # private: workspaces are made under it
    provider: str = "gvisor"
    max_turns: int = 40
    smoke: int = 4
    harness: Harness = Harness()
    code: sandboxed.Bounds = sandboxed.Bounds()
    stop: threading.Event | None = None


class WallBreach(Exception):
    """The harness itself put a sealed value on the model's side: the squeeze cannot go on."""


class Done(NamedTuple):
    """A finished session: its record's document (without the job section) and its workspace."""

    spec: Spec
    doc: dict[str, Any]
    predicate_fields: dict[str, Any]
    started: dt.datetime
    finished: dt.datetime
    workspace: Path
    files: dict[str, bytes]
    check: wall.WallCheck

    @property
    def graded(self) -> bool:
        """True when its controller is to be graded."""
        return self.doc["verdict"] == "graded"


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def folder_name(spec: Spec) -> str:
    """The session's recording folder's name."""
    return f"{spec.group}-{spec.index}"


def run_session(spec: Spec, setting: Setting) -> Done:
    """Run one session to its end (see the module doc). WallBreach when the harness's smoke seeds
    are sealed values; BadInput when the endpoint refuses the key, model or URL."""
    import plimsoll_sim as sim

    started = dt.datetime.now(dt.UTC)
    smoke = tuple(setting.harness.smoke(setting.smoke, setting.secrets))
    hit = wall.check_smoke(smoke, setting.secrets.sealed)
    if hit:
        raise WallBreach(f"session {spec.name}: its smoke seeds are sealed values ({', '.join(hit)})"
                         "; smoke seeds must be drawn fresh, never practice, fresh or held-out "
                         "seeds")
    folder = setting.recordings / folder_name(spec)
    kit = setting.harness.kit(setting.secrets)
    wall.record_kit(folder, kit)
    given = brief_mod.BriefInput(setting.course, sim.course(setting.course).info(), spec.recipe,
                                 setting.smoke, setting.max_turns)
    system, user = setting.harness.brief(given, setting.secrets)
    space = Workspace(Path(tempfile.mkdtemp(prefix=f"{folder_name(spec)}-", dir=setting.work)))
    tools = _Tools(space, kit, smoke, setting)
    with wall.Recording(setting.config.base_url, folder) as recording:
        client = ModelClient(setting.config, environ=setting.environ, budget=setting.budget,
                             via=recording.url,  # the proxy adds the path prefix (/v1)
                             cancel=setting.stop)
        session = client.session(system=system, tools=TOOLS)
        tools.until = time.monotonic() + setting.config.session_seconds
        session.user(user)
        ended, error, turns = _converse(session, tools, setting)
        transcript = session.transcript()
        outcome = session.outcome()
    check = wall.check_session(folder, setting.secrets.sealed)
    files = space.files()
    carries = wall.scan_workspace(files, setting.secrets.sealed)
    if ended in ENDED_STOPPED:
        verdict = "stopped"
    elif carries:
        verdict = "refused"
    elif not space.has_controller():
        verdict = "no_controller"
    else:
        verdict = "graded"
    requests, recording_sha = wall.manifest(folder)
    from plimsoll_ci.attest.canonical import dumps

    transcript_sha = _sha(dumps(transcript))
    brief_sha = _sha(dumps({"system": system, "user": user}))
    controller = {"sha256": files_digest(files)} if files else None
    doc = {
        "format": SESSION_FORMAT,
        "session": {"group": spec.group, "index": spec.index, "role": spec.role},
        "model": {"name": setting.config.model, "base_url": setting.config.base_url},
        "brief": {"sha256": brief_sha},
        "recipe": None if spec.recipe is None else {"sha256": spec.recipe_sha256},
        "ended": ended, "error": error, "turns": turns,
        "requests": outcome.requests, "tokens": outcome.tokens,
        "estimated_tokens": outcome.estimated_tokens,
        "tools": tools.calls,
        "limits": limits(setting.config), "dropped_calls": tools.dropped,
        "smoke": {"count": len(smoke), "sha256": _sha("\n".join(map(str, smoke)))},
        "workspace": {"files": {p: _sha(d) for p, d in files.items()},
                      "sha256": files_digest(files), "carries": carries},
        "verdict": verdict,
        "controller": f"built/{spec.group}/{spec.index}" if verdict == "graded" else None,
        "transcript": {"sha256": transcript_sha},
        "recording": {"folder": f"requests/{folder_name(spec)}", "requests": requests,
                      "sha256": recording_sha},
        "wall": {"hits": [h._asdict() for h in check.hits], "model_wrote": check.model_wrote},
    }
    fields = {
        "brief": {"sha256": brief_sha}, "controller": controller,
        "model": {"name": setting.config.model, "baseUrl": setting.config.base_url},
        "recipe": doc["recipe"], "recording": {"requests": requests, "sha256": recording_sha},
        "session": {"group": spec.group, "index": spec.index}, "tokens": outcome.tokens,
        "tools": [{"arguments": {"sha256": c["arguments_sha256"]}, "name": c["name"]}
                  for c in tools.calls],
        "transcript": {"sha256": transcript_sha},
    }
    return Done(spec, doc, fields, started, dt.datetime.now(dt.UTC), space.root, files, check)


def limits(config: ModelConfig) -> dict[str, Any]:
    """The bounds a session ran under, as its signed record states them."""
    from plimsoll_ci.model.transport import MAX_REPLY_BYTES

    return {"session_seconds": json_seconds(config.session_seconds),
            "calls_per_reply": config.calls_per_reply,
            "calls_per_session": config.calls_per_session,
            "request_timeout": json_seconds(config.timeout), "retries": config.retries,
            "reply_bytes": MAX_REPLY_BYTES}


def json_seconds(value: float) -> int | str:
    """Seconds as RFC 8785 JSON carries them in a record: a whole number, or its decimal text."""
    return int(value) if float(value).is_integer() else repr(float(value))


def _converse(session: Any, tools: _Tools, setting: Setting) -> tuple[str, str, int]:
    """Ask and answer until the session ends: (how it ended, error text, turns)."""
    from plimsoll_ci.model import EndpointError, MalformedReply

    turns = 0
    while True:
        if setting.stop is not None and setting.stop.is_set():
            return "interrupted", "", turns
        if turns >= setting.max_turns:
            return "max_turns", "", turns
        turns += 1
        try:
            reply = session.ask()
        except MalformedReply as e:
            session.user(f"error: your last reply could not be read ({e}); answer again")
            continue
        except EndpointError as e:
            if e.status in FATAL_STATUS:
                raise BadInput(f"the model endpoint refused the request: {e}") from None
            return "error", str(e)[:300], turns
        if reply is None:
            return str(session.stopped), "", turns
        tools.dropped += reply.dropped
        if not reply.tool_calls and not reply.dropped:
            return "answered", "", turns
        for call in reply.tool_calls:
            session.tool_result(call, tools.run(call, turns))


class _Tools:
    """The three tools over one workspace; every call is noted (name, digest of its arguments)."""

    def __init__(self, space: Workspace, kit: dict[str, bytes], smoke: tuple[int, ...],
                 setting: Setting) -> None:
        self.space, self.kit, self.smoke, self.setting = space, kit, smoke, setting
        self.calls: list[dict[str, Any]] = []
        self.dropped = 0  # calls over a cap: answered with an error, never run
        self.until = time.monotonic() + setting.config.session_seconds

    def run(self, call: Any, turn: int) -> str:
        result, ok = self._result(call)
        self.calls.append({"turn": turn, "name": call.name[:64],
                           "arguments_sha256": _sha(call.arguments_json), "ok": ok})
        return result

    def _result(self, call: Any) -> tuple[str, bool]:
        if time.monotonic() >= self.until:
            return "error: not run: the session's time is up", False
        if call.name not in TOOL_NAMES:
            return (f"error: unknown tool {call.name[:64]!r}; the tools are "
                    f"{', '.join(TOOL_NAMES)}"), False
        if call.arguments is None:
            return f"error: {call.error}", False
        args = call.arguments
        try:
            if call.name == "write_file":
                return self.space.write(args.get("path"), args.get("content")), True
            if call.name == "run_code":
                return self._run_code(args.get("code"), args.get("language", "python")), True
            return self._fly(), True
        except Refused as e:
            return f"error: {e}", False

    def _run_code(self, code: object, language: object = "python") -> str:
        if language not in sandboxed.LANGUAGES:
            raise Refused("language must be python or javascript")
        if not isinstance(code, str) or not code.strip():
            raise Refused(f"code must be a non-empty string of {str(language).capitalize()}")
        if len(code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
            raise Refused(f"code is over {MAX_CODE_BYTES} bytes")
        files = {**self.kit, **self.space.files()}
        bounds = self.setting.code
        left = self.until - time.monotonic()
        if left < bounds.wall_s:  # never past the session's wall clock
            bounds = bounds._replace(wall_s=max(left, 0.1), cpu_s=min(bounds.cpu_s, max(left, 0.1)))
        ran = sandboxed.run_code(files, code, bounds, self.setting.provider, str(language))
        return ran.text()

    def _fly(self) -> str:
        from plimsoll_ci.grading.request import GradeRequest
        from plimsoll_ci.grading.run import grade
        from plimsoll_ci.grading.seeds import Seed

        if not self.space.has_controller():
            raise Refused("there is no controller.py (or controller.mjs) in your workspace "
                          "yet; write it first")
        copy = Path(tempfile.mkdtemp(prefix="fly-", dir=self.setting.work))
        try:
            for rel, data in self.space.files().items():
                (copy / rel).parent.mkdir(parents=True, exist_ok=True)
                (copy / rel).write_bytes(data)
            seeds = [Seed(f"smoke:{n}", s, False) for n, s in enumerate(self.smoke, 1)]
            try:
                graded = grade(GradeRequest(str(copy), self.setting.course, seeds,
                                            self.setting.provider, batch_size=len(seeds),
                                            practice=self.setting.secrets.practice))
            except BadInput as e:
                raise Refused(str(e).replace(str(copy), "workspace")) from None
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        if graded.refused:
            return "fly: refused before any flight (the controller carries a smoke seed's value)"
        landed = sum(f.landed for f in graded.flights)
        lines = [f"fly: {landed} of {len(graded.flights)} flights landed "
                 f"({self.setting.course} course)"]
        for f in graded.flights:
            if f.landed:
                lines.append(f"{f.id}: landed at {f.time:.2f} s")
            else:
                detail = f": {f.detail[:300]}" if f.detail else ""
                lines.append(f"{f.id}: not landed ({f.reason}) at {f.time:.2f} s after "
                             f"{f.gates} gate(s){detail}")
        return "\n".join(lines)
