"""`plimsoll-ci fly`: fly a trusted controller in-process on chosen seeds; per-flight outcome, totals.

It imports the controller into this process: it is for code you trust (the reference controllers,
your own). A JavaScript controller (.mjs, .js) is flown by node through the grading protocol in
the `process` provider (no --plot). Untrusted code is graded in a sandbox with `plimsoll-ci grade`.

Without `--seeds` or `--seed-file` it flies smoke seeds drawn fresh for this call (`--smoke N`,
default 4): throwaway flights nobody could have fixed in a task text or memorized.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NOTICE = (
    "plimsoll-ci fly: running {path} in-process: for trusted code only "
    "(grade untrusted code in a sandbox with `plimsoll-ci grade`)"
)
NOTICE_JS = (
    "plimsoll-ci fly: running {path} with node in the process provider: for trusted code only "
    "(grade untrusted code in a sandbox with `plimsoll-ci grade`)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    from plimsoll_ci.commands._common import whole

    parser.add_argument("--controller", required=True, metavar="PATH",
                        help="a .py file defining class Controller, a .mjs or .js file whose "
                        "default export is one (flown by node), or a folder with controller.py, "
                        ".mjs or .js")
    parser.add_argument("--course", required=True, choices=["easy", "hard"])
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", metavar="LIST", help="seeds and ranges, e.g. 1,2,5-9")
    seeds.add_argument("--seed-file", metavar="F", help="one seed per line (# starts a comment)")
    seeds.add_argument("--smoke", type=whole(1, 64), metavar="N",
                       help="fly N smoke seeds drawn fresh for this call (the default, N=4; at "
                            "most 64)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--plot", metavar="OUT", help="write a plot of one flight (.png or .svg)")
    parser.add_argument("--plot-seed", type=whole(0, 2**64 - 1), metavar="SEED",
                        help="which flight to plot (default: the first seed)")


def is_javascript(path: str) -> bool:
    """Whether `path` is a JavaScript controller: a .mjs or .js file, or a folder whose entry is
    controller.mjs or controller.js (and no controller.py)."""
    from plimsoll_ci.sandbox.stage import JS_SUFFIXES

    p = Path(path)
    if p.is_dir():
        return not (p / "controller.py").is_file() and any(
            (p / f"controller{s}").is_file() for s in JS_SUFFIXES)
    return p.suffix in JS_SUFFIXES


def fly_javascript(path: str, seeds: list[int], course: str) -> list:
    """Fly a JavaScript controller with node, through the runner and the lockstep protocol of a
    grading, in the `process` provider (trusted code: no gVisor needed); per-flight results with
    seed, landed, gates, time, reason and detail, in the order of `seeds`."""
    from plimsoll_ci.grading.request import GradeRequest
    from plimsoll_ci.grading.run import grade
    from plimsoll_ci.grading.seeds import Seed

    flights = [Seed(f"seeds:{n}", s, True) for n, s in enumerate(seeds, 1)]
    graded = grade(GradeRequest(path, course, flights, "process"))
    return list(graded.flights)


def load_controller(path: str):
    """Import the controller module at `path` in-process and return its `Controller` class."""
    import importlib.util
    import uuid

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.files import inside

    p = Path(path)
    if p.is_dir():  # the folder is the controller's root: its controller.py must not leave it
        p = inside(p, "controller.py", f"controller {path}") if (p / "controller.py").exists() \
            else p / "controller.py"
    if not p.is_file():
        raise BadInput(f"controller {path}: no such file; pass a .py file that defines class"
                       " Controller (or a folder with controller.py)")
    name = f"_plimsoll_fly_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise BadInput(f"controller {p}: cannot be imported; pass a Python source file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(p.parent))  # a controller folder may hold its own helper modules
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise BadInput(f"controller {p}: importing it raised {type(e).__name__}: {e}"[:400]) from None
    finally:
        sys.path.remove(str(p.parent))
    cls = getattr(module, "Controller", None)
    if not isinstance(cls, type):
        raise BadInput(f"controller {p}: no class Controller; define class Controller(course_info)"
                       " with a step(obs) method (see docs/controller.md)")
    return cls


def run(args: argparse.Namespace) -> int:
    """Fly, print per-flight outcomes and totals, optionally plot one flight."""
    import json

    import plimsoll_sim as sim
    from plimsoll_ci.errors import BadInput

    seeds = _seeds(args)
    plot_seed = args.plot_seed if args.plot_seed is not None else seeds[0]
    if args.plot:
        suffix = Path(args.plot).suffix.lower()
        if suffix not in (".png", ".svg"):
            raise BadInput(f"--plot {args.plot}: the file name must end in .png or .svg")
        if plot_seed not in seeds:
            raise BadInput(f"--plot-seed {plot_seed}: not one of the seeds flown; pick one of them")
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise BadInput(f"--plot {args.plot}: needs matplotlib, which is not installed; "
                           "pip install matplotlib (it is in plimsoll-ci's [test] extra)")
    from plimsoll_ci.names import shown

    course = sim.course(args.course)
    if is_javascript(args.controller):
        if args.plot:
            raise BadInput(f"--plot {args.plot}: plots need the flight recorded in-process, "
                           "which only a Python controller is; drop --plot for a JavaScript one")
        print(NOTICE_JS.format(path=shown(args.controller)), file=sys.stderr)
        results, batch = fly_javascript(args.controller, seeds, course.name), None
    else:
        controller = load_controller(args.controller)
        print(NOTICE.format(path=shown(args.controller)), file=sys.stderr)
        results, batch = sim.fly(controller, seeds, course, record=bool(args.plot))
    landed = sum(r.landed for r in results)
    if args.format == "json":
        flights = [
            {"seed": r.seed, "landed": r.landed, "gates": r.gates, "time": r.time, "reason": r.reason}
            for r in results
        ]
        print(json.dumps({"flights": flights, "landed": landed, "total": len(results)}))
    else:
        print(f"{'seed':>20}  landed  gates   time    reason")
        for r in results:
            detail = f" ({shown(r.detail)})" if r.detail else ""  # what the controller said
            print(f"{r.seed:>20}  {'yes' if r.landed else 'no':<6}  {r.gates}/3  {r.time:6.2f}s  "
                  f"{r.reason}{detail}")
        print(f"landed {landed}/{len(results)} on the {course.name} course")
    if args.plot:
        plot_flight(batch, seeds.index(plot_seed), args.plot)
        if args.format == "text":
            print(f"plot of seed {plot_seed} written to {shown(args.plot)}")
    return 0


def _seeds(args: argparse.Namespace) -> list[int]:
    import plimsoll_sim as sim
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading.seeds import parse_seeds, read_seed_file
    from plimsoll_ci.grading.seedsets import SMOKE_COUNT, draw_smoke

    if args.seeds is not None:
        return parse_seeds(args.seeds)
    if args.seed_file is not None:
        return read_seed_file(args.seed_file)
    count = SMOKE_COUNT if args.smoke is None else args.smoke
    if not 1 <= count <= 64:
        raise BadInput(f"--smoke {count}: fly between 1 and 64 smoke seeds")
    return list(draw_smoke(count, avoid=sim.PRACTICE_SEEDS))


def plot_flight(batch, i: int, out: str) -> None:
    """The replay view of flight `i`: from above, from the side, and height over time with gusts."""
    from plimsoll_ci.errors import BadInput

    try:
        import matplotlib
    except ImportError:
        raise BadInput(f"--plot {out}: needs matplotlib, which is not installed; "
                       "pip install matplotlib (it is in plimsoll-ci's [test] extra)") from None
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    course, flight = batch.course, batch.flights[i]
    result = batch.results()[i]
    tr = batch.trajectory(i)
    pos, t = tr["pos"], tr["t"]
    fig, (top, side, time) = plt.subplots(1, 3, figsize=(15, 5), gridspec_kw={"width_ratios": [1, 1.2, 1.4]})
    room_x, room_y, room_z = course.room
    top.set(xlim=(0, room_x), ylim=(0, room_y), aspect="equal", xlabel="x (m)", ylabel="y (m)",
            title="from above")
    side.set(xlim=(0, room_x), ylim=(0, room_z), aspect="equal", xlabel="x (m)", ylabel="z (m)",
             title="from the side")
    for name, pad in (("start", course.start), ("land", course.land)):
        top.add_patch(Circle(pad.center[:2], pad.radius, color="tab:green", alpha=0.3))
        top.annotate(name, pad.center[:2], ha="center", va="center", fontsize=8)
        side.plot([pad.center[0] - pad.radius, pad.center[0] + pad.radius], [0, 0], color="tab:green",
                  linewidth=4)
    for k, gate in enumerate(course.gates):
        (cx, cy, cz), (nx, ny, _) = gate.center, gate.normal
        half = gate.size / 2 + gate.frame
        ux, uy = -ny, nx
        top.plot([cx - ux * half, cx + ux * half], [cy - uy * half, cy + uy * half], color="tab:red",
                 linewidth=3)
        top.annotate(f"gate {k}", (cx + 0.15, cy + 0.15), fontsize=8, color="tab:red")
        top.arrow(cx, cy, nx * 0.3, ny * 0.3, head_width=0.08, color="tab:red")
        width = max(abs(ux) * 2 * half, 0.04)
        side.add_patch(Rectangle((cx - width / 2, cz - half), width, 2 * half, fill=False,
                                 edgecolor="tab:red", linewidth=2))
    top.plot(pos[:, 0], pos[:, 1], color="tab:blue", linewidth=1.2)
    side.plot(pos[:, 0], pos[:, 2], color="tab:blue", linewidth=1.2)
    time.plot(t, pos[:, 2], color="tab:blue", label="height")
    for gust in flight.gusts:
        time.axvspan(gust.start, gust.start + gust.duration, color="tab:orange",
                     alpha=0.45 if gust.sharp else 0.2)
        time.annotate(f"{'sharp ' if gust.sharp else ''}gust {gust.peak:.1f} m/s",
                      (gust.start, room_z * 0.92), fontsize=7, rotation=90, va="top")
    for gt in tr["gate_times"]:
        time.axvline(gt, color="tab:red", linestyle=":", linewidth=1)
    time.set(xlim=(0, course.time_limit), ylim=(0, room_z), xlabel="t (s)", ylabel="z (m)",
             title="height, gates passed (dotted), gusts (shaded)")
    fig.suptitle(f"seed {result.seed} on the {course.name} course: {result.reason}, "
                 f"{result.gates}/3 gates, {result.time:.2f} s")
    fig.tight_layout()
    try:
        fig.savefig(out, format=Path(out).suffix.lower()[1:])
    except OSError as e:
        raise BadInput(f"--plot {out}: cannot write it ({e.strerror}); pick a writable path") from None
    finally:
        plt.close(fig)
