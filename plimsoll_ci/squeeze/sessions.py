"""Every rebuild session of a job, `jobs` at a time, stopped cleanly by Ctrl-C or SIGTERM.

Sessions wait on the model most of the time, so they run in threads of this process (they share
the run's token budget, `model.Budget`); what they run (`run_code`, `fly`) runs in sandboxes.
Results come back in plan order whatever order they finish in. On a signal no new session starts,
every running one stops before its next request, and every sandbox is stopped; nothing of an
interrupted session phase is signed. A session that finds the harness breaching the wall
(`rebuild.WallBreach`), or an endpoint refusing the key, stops the others the same way.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from plimsoll_ci.squeeze import rebuild
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.pool import Interrupted

JOIN_WAIT_S = 30.0


def specs(job: Job, recipes: dict[str, Any]) -> list[rebuild.Spec]:
    """The job's sessions in plan order; `recipes` maps a loop to its counted recipe."""
    out = []
    for g in job.groups():
        recipe = recipes.get(g.name) if g.name != "control" else None
        role = "control" if g.name == "control" else "rebuild"
        for i in range(1, g.build + 1):
            out.append(rebuild.Spec(g.name, i, role, recipe.text if recipe else None,
                                    recipe.sha256 if recipe else None))
    return out


def run_all(planned: Sequence[rebuild.Spec], setting: rebuild.Setting, jobs: int,
            on_start: Callable[[rebuild.Spec], None],
            on_done: Callable[[rebuild.Done], None]) -> list[rebuild.Done]:
    """Run every session, `jobs` at a time; their results in plan order.

    Raises Interrupted on SIGINT / SIGTERM, and re-raises the first session's failure (a wall
    breach, a refused key, no sandbox); in both cases after every session and sandbox stopped."""
    from plimsoll_ci.sandbox.session import close_all

    stop = threading.Event()
    setting = setting._replace(stop=stop)
    lock = threading.Lock()
    pending = list(enumerate(planned))[::-1]
    done: dict[int, rebuild.Done] = {}
    failed: list[BaseException] = []
    wake = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            with lock:
                if not pending:
                    return
                index, spec = pending.pop()
            on_start(spec)
            try:
                result = rebuild.run_session(spec, setting)
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                with lock:
                    failed.append(e)
                stop.set()
                wake.set()
                return
            if stop.is_set():
                return  # a session cut short by the stop is not a result
            with lock:
                done[index] = result
            on_done(result)
            wake.set()

    def to_interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    old_term = signal.signal(signal.SIGTERM, to_interrupt)
    threads = [threading.Thread(target=worker, name=f"rebuild-session-{n}", daemon=True)
               for n in range(max(1, min(jobs, len(planned))))]
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            wake.wait(0.5)
            wake.clear()
            if failed:
                break
    except (KeyboardInterrupt, Interrupted) as e:
        _stop(stop, threads, close_all)
        raise (e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)) from None
    finally:
        signal.signal(signal.SIGTERM, old_term)
    if failed:
        _stop(stop, threads, close_all)
        raise failed[0]
    return [done[i] for i in sorted(done)]


def _stop(stop: threading.Event, threads: list[threading.Thread],
          close_all: Callable[[], int]) -> None:
    """No new session, no new request; every sandbox stopped; wait a little for the threads."""
    stop.set()
    close_all()
    for t in threads:
        t.join(JOIN_WAIT_S / max(1, len(threads)))
    close_all()  # a sandbox a thread started while we waited


# ---- from sessions to gradings and records ------------------------------------------------------

BUILT_FOLDER = "built"  # in the out folder: the graded rebuilds' workspaces, built/GROUP/N/


def keep_workspaces(done: Sequence[rebuild.Done], out: Any) -> dict[str, Any]:
    """Copy each graded session's workspace into `out/built/GROUP/N/`; {controller id: path}.
    Refused workspaces (they carry sealed values) are never copied."""
    import shutil
    from pathlib import Path

    paths = {}
    for d in done:
        if not d.graded:
            continue
        dest = Path(out) / BUILT_FOLDER / d.spec.group / str(d.spec.index)
        shutil.copytree(d.workspace, dest)
        paths[d.doc["controller"]] = dest
    return paths


def hits(done: Sequence[rebuild.Done]) -> list[str]:
    """The tripwire's hits over every session: `session S request R at PLACE: sealed entry E`."""
    return [f"session {d.spec.name} request requests/{rebuild.folder_name(d.spec)}/{h.request} "
            f"at {h.place}: sealed entry {h.entry}" for d in done for h in d.check.hits]


def records(done: Sequence[rebuild.Done], job_ctx: dict[str, Any]) -> list[tuple[dict, dict]]:
    """(session document, rebuild-session predicate) for each session, ready to sign."""
    from plimsoll_ci.attest import record

    out = []
    for d in done:
        doc = {**d.doc, "squeeze": {"job": job_ctx}}
        predicate = record.make_session_predicate(result_doc=doc, started=d.started,
                                                  finished=d.finished, **d.predicate_fields)
        out.append((doc, predicate))
    return out


def summary(d: rebuild.Done) -> str:
    """One line for the progress log."""
    doc = d.doc
    text = f"{doc['verdict']} ({doc['ended']}, {doc['turns']} replies, {doc['tokens']} tokens"
    if doc["workspace"]["carries"]:
        text += f"; its workspace carries {len(doc['workspace']['carries'])} sealed value(s)"
    return text + ")"


def ungraded_loops(job: Job, built: list) -> list[str]:
    """Loops left with no rebuild to measure a gap against (every session of theirs ended
    without a controller to grade, and none was imported)."""
    out = []
    for g in job.loops:
        mine = [d for d in built if d.spec.group == g.name]
        if g.rebuilds or any(d.graded for d in mine):
            continue
        ends: dict[str, int] = {}
        for d in mine:
            why = d.doc["ended"] if d.doc["verdict"] == "stopped" else d.doc["verdict"]
            ends[why] = ends.get(why, 0) + 1
        out.append(f"loops.{g.name}: none of its {len(mine)} rebuild sessions left a controller "
                   "to grade (" + ", ".join(f"{k} {v}" for k, v in sorted(ends.items()))
                   + "): no gap can be measured; nothing was graded (raise --max-tokens, or run "
                   "again when the endpoint is not rate-limiting)")
    return out
