"""`squeeze canary JOB`: the canary run of the rebuild harness.

    found = run_canary(job, CanaryOptions(out=Path("canary-out")))   # the built-in echo endpoint
    found.ok, found.text

1. `canary make` draws three markers: `practice-seed` (a number), `fresh-seed` (a number) and
   `generator` (a word).
2. They are planted where the secrets live, in `OUT/planted/`: the practice seed file, the fresh
   set's reveal, and a copy of the simulator's generator carrying the word. The harness then
   takes its secrets from there (and nowhere else): the practice set, the fresh set and the
   generator it seals and keeps back are the canaries.
3. The rebuild harness runs as `squeeze run` runs it (`rebuild.run_session`, every request through
   the recording proxy into `OUT/requests/`, the sandbox kit recorded beside), one session per loop
   with its recipe and one for the control group, against the configured endpoint or the built-in
   echo endpoint (`echo.py`).
4. `canary check`: it passes only when every canary is in the planted tree and none is in anything
   that crossed the wall. The harness refusing its own smoke seeds because they are sealed values
   is a failure too, named by the canary it hit.

Exit 0 pass, 1 a canary was sent or not planted. Nothing is graded; nothing is signed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.squeeze import rebuild, recipes, sessions, wall
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.progress import Progress

CANARY_FILE = "canary.json"
PLANTED = "planted"
REQUESTS = "requests"
PRACTICE_FILE = "practice-seeds.txt"
FRESH_FILE = "fresh-seeds.json"
GENERATOR_FILE = "sim/generator.py"


class CanaryOptions(NamedTuple):
    """How to run the canary."""

    out: Path  # a new or empty folder: canary.json, planted/, requests/
    model: Any = None  # run.Model; None: the built-in echo endpoint
    provider: str = "gvisor"
    jobs: int = 1
    harness: rebuild.Harness = rebuild.Harness()


class CanaryResult(NamedTuple):
    """The canary run's verdict and its report."""

    ok: bool
    text: str


def plant(out: Path) -> tuple[Path, wall.Secrets]:
    """Make the canaries, plant them in `out/planted/`, and read the secrets back from there."""
    doc, markers = wall.make_canary()
    canary_path = out / CANARY_FILE
    canary_path.write_text(wall.canary_dumps(doc))
    planted = out / PLANTED
    (planted / "sim").mkdir(parents=True)
    (planted / PRACTICE_FILE).write_text(markers["practice-seed"] + "\n")
    salt = fresh_mod.draw(1).salt
    (planted / FRESH_FILE).write_text(json.dumps(
        fresh_mod.reveal(fresh_mod.make([int(markers["fresh-seed"])], salt))) + "\n")
    source = wall.generator_path().read_text()
    (planted / GENERATOR_FILE).write_text(
        source + f"\n\n# provenance label of this copy\nLABEL = \"{markers['generator']}\"\n")
    # the harness reads its secrets from the planted tree, as it would from where they live
    practice = tuple(int(x) for x in (planted / PRACTICE_FILE).read_text().split())
    fresh = fresh_mod.from_reveal(json.loads((planted / FRESH_FILE).read_text()))
    generator = (planted / GENERATOR_FILE).read_bytes()
    sealed = (wall.canary_sealed(canary_path),)
    return canary_path, wall.Secrets(practice, fresh, generator, sealed)


def specs(job: Job) -> list[rebuild.Spec]:
    """One session per loop (with its recipe, when it has one) and one for the control group."""
    out = []
    for g in job.loops:
        recipe = recipes.load(job.base, g.recipe, job.recipe_tokens,
                              f"{job.path} loops.{g.name}") if g.recipe else None
        out.append(rebuild.Spec(g.name, 1, "rebuild", recipe.text if recipe else None,
                                recipe.sha256 if recipe else None))
    out.append(rebuild.Spec("control", 1, "control", None, None))
    return out


def run_canary(job: Job, options: CanaryOptions, progress: Progress) -> CanaryResult:
    """Plant, run the harness, check (see the module doc)."""
    from plimsoll_ci.model import ModelConfig
    from plimsoll_ci.model.session import Budget
    from plimsoll_ci.squeeze import echo
    from plimsoll_ci.squeeze.run import claim_out

    out = Path(options.out)
    planned = specs(job)  # a recipe over budget stops here, before anything is written
    claim_out(out)
    canary_path, secrets = plant(out)
    (out / REQUESTS).mkdir()
    endpoint = None
    if options.model is None:
        endpoint = echo.EchoEndpoint()
        config = ModelConfig(base_url=endpoint.url, model=echo.ECHO_MODEL, max_tokens=1_000_000,
                             api_key_env=echo.ECHO_KEY_ENV, timeout=30.0, retries=1)
        environ: Any = {echo.ECHO_KEY_ENV: "echo"}
    else:
        config, environ = options.model.config, options.model.environ
    lines: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="plimsoll-canary-") as work:
            setting = rebuild.Setting(config, environ, Budget(config.max_tokens), secrets,
                                      job.course, out / REQUESTS, Path(work), options.provider,
                                      min(job.max_turns, 4), job.smoke, options.harness)
            progress.start(len(planned), f"canary run: {len(planned)} sessions through "
                           f"{config.model}, the practice seeds, fresh seeds and generator "
                           f"replaced by canaries planted in {out / PLANTED}")
            try:
                sessions.run_all(planned, setting, options.jobs,
                                 lambda s: progress.began(f"session {s.name}"),
                                 lambda d: progress.finished(f"session {d.spec.name}",
                                                             sessions.summary(d)))
            except rebuild.WallBreach as e:
                lines.append(f"FAIL  {e}")
            finally:
                progress.close()
    finally:
        if endpoint is not None:
            endpoint.close()
    ok, text = wall.canary_check(canary_path, out / PLANTED, out / REQUESTS)
    text = "\n".join(lines) + ("\n" if lines else "") + text
    return CanaryResult(ok and not lines, text)
