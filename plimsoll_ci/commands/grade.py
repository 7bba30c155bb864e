"""`plimsoll-ci grade`: grade an untrusted controller in a sandbox; outcome, tier, evidence, CPU.

Exit codes: 0 graded; 1 refused (the controller carries a sealed value: a seed this run flies, or
an entry of a `--withheld` set); 2 bad input (among it a reveal that does not match its
commitment, and a held-out or fresh set the seed lint calls guessable without
`--allow-weak-seeds`), or no sandbox at the tier asked for.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    from plimsoll_ci.commands._common import whole
    from plimsoll_ci.commands._grading_flags import (
        add_limit_arguments,
        add_sandbox_arguments,
        add_withheld_arguments,
    )
    from plimsoll_ci.commands._signing import add_signing_arguments

    parser.add_argument("--controller", required=True, metavar="PATH",
                        help="a .py file defining class Controller, a .mjs or .js file whose "
                        "default export is one (flown by node), or a folder with ENTRY.py, "
                        "ENTRY.mjs or ENTRY.js")
    parser.add_argument("--entry", default="controller", metavar="NAME",
                        help="entry module of a controller folder (default: controller)")
    parser.add_argument("--course", required=True, choices=["easy", "hard"])
    seeds = parser.add_mutually_exclusive_group(required=True)
    seeds.add_argument("--seeds", metavar="LIST",
                       help="seeds and ranges, e.g. 1,2,5-9, or 'practice' for the practice set")
    seeds.add_argument("--seed-file", metavar="F",
                       help="held-out seeds, one per line: results name them by line, never by "
                            "value")
    seeds.add_argument("--fresh", type=whole(1, 10_000), metavar="N",
                       help="draw N fresh 64-bit seeds; their commitment is printed before "
                            "any flight and the reveal after")
    seeds.add_argument("--sealed", metavar="SET.commit",
                       help="a held-out set committed earlier (plimsoll-ci seeds commit); give "
                            "its set or reveal with --reveal. Refused unless they match")
    parser.add_argument("--reveal", metavar="SET.json",
                        help="with --sealed: the set file (or its reveal) the commitment is to")
    parser.add_argument("--allow-weak-seeds", action="store_true",
                        help="grade a held-out or fresh set the seed lint calls guessable "
                             "(the signed record says so)")
    add_sandbox_arguments(parser, listed=True)
    add_withheld_arguments(parser)
    add_limit_arguments(parser)
    parser.add_argument("--progress", choices=["auto", "bar", "lines", "off"], default="auto",
                        help="progress on stderr: a bar on a terminal, plain lines in CI logs "
                             "(auto: bar on a terminal unless CI or GITHUB_ACTIONS is set)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report here")
    add_signing_arguments(parser)


def _seeds(args: argparse.Namespace):
    """(seeds, fresh set, sealed set) the flags ask for."""
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading import seeds, seedsets

    if (args.sealed is None) != (args.reveal is None):
        raise BadInput("--sealed SET.commit and --reveal SET.json go together: the commitment "
                       "published before grading, and the set it commits to")
    if args.sealed is not None:
        return (), None, seedsets.open_sealed(args.sealed, args.reveal)
    if args.fresh is not None:
        if not 1 <= args.fresh <= 10_000:
            raise BadInput(f"--fresh {args.fresh}: draw between 1 and 10000 seeds")
        return (), seedsets.draw(args.fresh), None
    if args.seeds is not None:
        return seeds.given(args.seeds), None, None
    return seeds.held_out(args.seed_file), None, None


def _progress(display, label: str):
    """The grading's callback: the fresh set's commitment (always), then the display's."""
    shown = display.callback(label)

    def on(event) -> None:
        if event.event == "committed":
            print(f"plimsoll-ci grade: fresh set of {event.total} committed: {event.detail}",
                  file=sys.stderr, flush=True)
        elif event.event == "sealed":
            print(f"plimsoll-ci grade: sealed set, reveal matches its commitment {event.detail}",
                  file=sys.stderr, flush=True)
        shown(event)

    return on


def run(args: argparse.Namespace) -> int:
    """Parse the flags into a request, grade (and sign), print the result or the refusal."""
    import json

    from plimsoll_ci.commands import _grading_flags as flags
    from plimsoll_ci.commands._common import write_output
    from plimsoll_ci.commands._interrupt import (
        Interrupted,
        reap_leftovers,
        signals_interrupt,
        stop_everything,
    )
    from plimsoll_ci.commands._progress import Display
    from plimsoll_ci.commands._signing import signer_from_args
    from plimsoll_ci.grading.request import GradeRequest
    from plimsoll_ci.grading.sign import grade_and_sign
    from plimsoll_ci.withheld import key_from, load

    signer = signer_from_args(args, "plimsoll-ci grade")  # a bad key: exit 2 before anything runs
    seeds, fresh_set, sealed = _seeds(args)
    key = key_from(args.withheld_key_env, args.withheld_key_file,
                   ("--withheld-key-env", "--withheld-key-file"))
    request = GradeRequest(args.controller, args.course, seeds, args.provider,
                           min_tier=args.min_tier, entry=args.entry,
                           withheld=tuple(load(p, key=key) for p in args.withheld),
                           budget=flags.budget(args), limits=flags.limits(args), fresh=fresh_set,
                           sealed=sealed, allow_weak_seeds=args.allow_weak_seeds)
    with signals_interrupt():
        display = Display(sys.stderr, args.progress, prog="plimsoll-ci grade")
        try:
            reap_leftovers("plimsoll-ci grade")
            result = grade_and_sign(request, signer, args.bundle,
                                    _progress(display, args.controller))
        except Interrupted as e:
            display.close()
            stop_everything()
            print(f"plimsoll-ci grade: stopped by {e.name}; every sandbox it started was stopped "
                  "and its files removed; no result", file=sys.stderr)
            return 128 + e.signum
        finally:
            display.close()
    if result.refused:
        write_output(_refusal(result, args.format), args.output)
        return 1
    if result.record is not None:
        from plimsoll_ci.names import shown

        print(f"plimsoll-ci grade: signed record {result.record} appended to "
              f"{shown(str(result.bundle))}", file=sys.stderr)
    doc = result.document()
    text = (json.dumps(doc, indent=2, sort_keys=True) + "\n" if args.format == "json"
            else _text(doc))
    write_output(text, args.output)
    return 0


def _refusal(result, fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps(result.document(), indent=2, sort_keys=True) + "\n"
    lines = ["REFUSED: the controller carries sealed values; nothing was flown."]
    for f in result.refused:
        place = f"{f.path}:{f.line}:{f.column}" if f.where == "content" else f"{f.path} (name)"
        chain = f" via {f.chain}" if f.chain else ""
        lines.append(f"  {place}{chain}: sealed entry {f.entry} ({f.kind})")
    lines += [f"note: {n}" for n in result.notes]
    return _shown(lines)


def _shown(lines: list[str]) -> str:
    """The lines of a text report, each through `shown`: a controller's path, a finding's place, a
    flight's detail (what the controller wrote) and a note are user input."""
    from plimsoll_ci.names import shown

    return "".join(shown(line) + "\n" for line in lines)


def _text(r: dict) -> str:
    ev = r["evidence"] if "batches" not in r["evidence"] else r["evidence"]["batches"][0]
    lines = [f"grading: course {r['course']}, provider {r['provider']}, tier {r['tier']} "
             f"(configured {r['configured_tier']})"]
    runtime = ev.get("runtime", "")
    if ev.get("runtime_version"):
        runtime += f" ({ev['runtime_version']})"
    lines.append(f"  runtime: {runtime}; platform {ev.get('platform', '-')}")
    for c in ev.get("checks", []):
        lines.append(f"  check {c['name']}: {'passed' if c['passed'] else 'FAILED'} ({c['seen']})")
    lines.append("")
    lines.append(f"{'flight':<14} {'seed':>20} {'landed':>6} {'gates':>5} {'time':>7} "
                 f"{'cpu s':>8}  reason")
    for f in r["flights"]:
        seed = str(f["seed"]) if f["seed"] is not None else "(sealed)"
        reason = f["reason"] + (f": {f['detail']}" if f["detail"] else "")
        lines.append(f"{f['id']:<14} {seed:>20} {('yes' if f['landed'] else 'no'):>6} "
                     f"{f['gates']:>5} {f['time']:>7.2f} {f['cpu_s']:>8.4f}  {reason}")
    cpu = r["cpu"]
    lines.append("")
    lines.append(f"landed {r['landed']} of {r['total']}")
    lines.append(f"cpu: max per tick {cpu['max_tick_s']:.4f} s, total {cpu['total_s']:.3f} s, "
                 f"start-up {cpu['startup_s']:.3f} s (budget {cpu['budget']['per_tick_s']:g} s "
                 f"per flight per tick, {cpu['budget']['per_flight_s']:g} s per flight)")
    for s in r.get("code_check_summary", []):
        lines.append(f"code check: {s}")
    for n in r.get("notes", []):
        lines.append(f"note: {n}")
    if r.get("fresh_set"):
        lines.append(f"fresh set: commitment {r['fresh_set']['commitment']}; revealed above")
    if r.get("sealed_set"):
        s = r["sealed_set"]
        lines.append(f"sealed set: commitment {s['commitment']}, committed {s['committed']}; the "
                     "reveal is in the signed record (publish it with the bundle)")
    check = r.get("seed_check") or {}
    if check.get("allowWeak"):
        lines.append("weak seeds allowed: --allow-weak-seeds (the signed record says so)")
    return _shown(lines)
