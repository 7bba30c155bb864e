"""`plimsoll-ci seeds draw|commit|reveal|check|lint`: held-out seed sets, sealed end to end.

    seeds draw N -o SET.json [--bits 64]     CSPRNG seeds, salted, mode 0600, never overwrites
    seeds commit SET.json [-o SET.commit]    digest, count, bits, time: publish before grading
    seeds reveal SET.json [-o REVEAL.json]   seeds and salt: publish after (the one command that
                                             prints seeds)
    seeds check SET.commit REVEAL.json       0 when the reveal is the committed set, else 1
    seeds lint [ROLE=]FILE... [--horizon N] [--select PATH]...
                                             1 on any finding, naming the line, never the seed

Exit codes: 0 done (or clean, or matching); 1 a reveal that does not match, or a lint finding;
2 bad input.
"""

from __future__ import annotations

import argparse
import sys

ROLE_HELP = "held-out (default), fresh, practice, smoke"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The five actions and their flags."""
    from plimsoll_ci.commands._common import whole

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    d = sub.add_parser("draw", help="draw a held-out set (64-bit CSPRNG seeds, salted, 0600)",
                       description="Draw N seeds with the operating system's CSPRNG over the "
                       "simulator's range, with a salt for the commitment; written mode 0600, "
                       "never over an existing file, never printed.")
    d.add_argument("count", type=whole(1, 10_000), metavar="N", help="how many seeds (1..10000)")
    d.add_argument("-o", "--output", required=True, metavar="SET.json",
                   help="the private set file to create (must not exist)")
    d.add_argument("--bits", type=whole(40, 64), default=64, metavar="B",
                   help="draw below 2**B (40..64, default 64): the whole range the simulator "
                        "takes")
    c = sub.add_parser("commit", help="the commitment to publish before grading",
                       description="Write the commitment to SET.json: its digest, the count, the "
                       "bits and the time; nothing in it helps guess a seed. Publish it (commit "
                       "it to the benchmark's repository, post it) before any grading.")
    c.add_argument("set", metavar="SET.json")
    c.add_argument("-o", "--output", metavar="SET.commit",
                   help="write here (must not exist); default: print it")
    r = sub.add_parser("reveal", help="the reveal to publish after grading (prints the seeds)",
                       description="Write the reveal of SET.json (its seeds and salt), to "
                       "publish after every grading on the set is done. This is the one "
                       "command that prints sealed seeds.")
    r.add_argument("set", metavar="SET.json")
    r.add_argument("-o", "--output", metavar="REVEAL.json",
                   help="write here (must not exist); default: print it")
    k = sub.add_parser("check", help="check a reveal against its commitment",
                       description="Exit 0 when REVEAL.json (a reveal or the set file) is the "
                       "set SET.commit commits to, 1 when it is not, 2 for unreadable input.")
    k.add_argument("commitment", metavar="SET.commit")
    k.add_argument("reveal", metavar="REVEAL.json")
    lint = sub.add_parser("lint", help="find seeds a hunt or a person would guess",
                          description="Lint seed files (one seed per line, or YAML, JSON, TOML "
                          "or CSV with --select) or set files, where the private seed files "
                          "live. Name each file's job as ROLE=FILE "
                          f"({ROLE_HELP}). Seeds shared between files are flagged. Each "
                          "finding names the line and why; no seed is printed. Exit 1 on any "
                          "finding.")
    lint.add_argument("files", nargs="+", metavar="[ROLE=]FILE")
    lint.add_argument("--horizon", type=horizon, default=2**32, metavar="N",
                      help="flag seeds below N (or within N of 2**64-1): how far a hunt "
                           "counting from 0 gets (default 2**32; 2**K or a number)")
    lint.add_argument("--select", action="append", default=[], metavar="PATH",
                      help="the seeds of a YAML, JSON, TOML or CSV file: heldout.seeds[*], a "
                           "CSV column name; once per such file, in the order of the files "
                           "(see docs/withheld-sets.md)")


def _draw(args: argparse.Namespace) -> int:
    from plimsoll_ci.grading import seedsets

    fs = seedsets.draw(args.count, args.bits)
    seedsets.write_set(args.output, fs, args.bits)
    print(f"plimsoll-ci seeds: wrote {args.output}: {len(fs.seeds)} seeds below 2^{args.bits}, "
          "salted, mode 0600 (keep it private; it never ships). Next: plimsoll-ci seeds commit "
          f"{args.output} -o SET.commit, and publish SET.commit before grading", file=sys.stderr)
    return 0


def _publish(doc: dict, output: str | None, what: str) -> None:
    from plimsoll_ci.grading import seedsets

    if output:
        seedsets.write_public(output, doc, what)
    else:
        sys.stdout.write(seedsets.dumps(doc))


def _commit(args: argparse.Namespace) -> int:
    import os
    import stat

    from plimsoll_ci.grading import seedsets

    revealed = seedsets.read_revealed(args.set)
    if revealed.kind != "set":
        print(f"plimsoll-ci seeds: warning: {args.set} is a reveal: a commitment made after the "
              "seeds were published proves nothing", file=sys.stderr)
    elif stat.S_IMODE(os.stat(args.set).st_mode) & 0o077:
        print(f"plimsoll-ci seeds: warning: {args.set} can be read by others than its owner; "
              f"chmod 600 {args.set}", file=sys.stderr)
    c = seedsets.commitment(revealed.fresh, revealed.bits)
    _publish(c.document(), args.output, "commitment")
    print(f"plimsoll-ci seeds: commitment {c.digest} to {c.count} seeds of {c.bits} bits, "
          f"committed {c.committed}" + (f", written to {args.output}" if args.output else "")
          + ". Publish it before grading; grade with --sealed SET.commit --reveal "
          f"{args.set}", file=sys.stderr)
    return 0


def _reveal(args: argparse.Namespace) -> int:
    from plimsoll_ci.grading import seedsets

    revealed = seedsets.read_revealed(args.set)
    _publish(seedsets.reveal_document(revealed.fresh, revealed.bits), args.output, "reveal")
    if args.output:
        print(f"plimsoll-ci seeds: wrote {args.output}: the reveal of {len(revealed.fresh.seeds)} "
              "seeds; publish it once every grading on the set is done", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    from plimsoll_ci.grading import seedsets

    c = seedsets.read_commitment(args.commitment)
    problems = seedsets.mismatches(c, seedsets.read_revealed(args.reveal))
    if problems:
        print(f"{args.reveal} does NOT match {args.commitment}:")
        for p in problems:
            print(f"  {p}")
        return 1
    print(f"{args.reveal} matches {args.commitment}: {c.count} seeds of {c.bits} bits, "
          f"committed {c.committed} (commitment {c.digest})")
    return 0


def horizon(text: str) -> int:
    """`--horizon`: `2**32`, `2^32` or a decimal number from 2 to 2**63 (argparse refuses
    anything else, exit 2). The base and power are bounded before the power is taken:
    `9**999999999` is refused at once, never computed."""
    t = text.strip().replace("_", "")
    base, sep, power = t.replace("^", "**").partition("**")
    value = -1
    base, power = base.strip(), power.strip()
    parts = (base, power) if sep else (t,)
    # 2**63 has 19 digits: a longer number is out of range however it is written
    if all(p.isdigit() and p.isascii() and len(p) <= 20 for p in parts):
        if not sep:
            value = int(t)
        elif int(base) <= 2**63 and int(power) <= 64:  # at most 4,032 bits: computed at once
            value = int(base) ** int(power)
    if not 2 <= value <= 2**63:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give 2**K or a number between 2 and "
                                         "2**63")
    return value


def _seed_set_file(data: bytes) -> bool:
    """Whether `data` is a file `seeds draw|commit|reveal` wrote (read by `read_revealed`)."""
    import json

    if not data.lstrip().startswith(b"{"):
        return False
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and str(doc.get("format", "")).startswith("plimsoll-seed-")


def lint_set(arg: str, select: str | None = None, data: bytes | None = None):
    """The `seedlint.LintSet` of one `[ROLE=]FILE` argument: a seed file (one seed a line, or a
    structured file and the `select` that picks its seeds) or a set/reveal file."""
    from plimsoll_ci import valuefiles
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading import seedlint, seedsets
    from plimsoll_ci.grading.seeds import read_seed_lines

    role, path = role_and_path(arg)
    if data is None:
        data = valuefiles.read(path, "seed file")
    if _seed_set_file(data):
        fs = seedsets.read_revealed(path).fresh
        seeds = tuple(seedlint.SeedAt(f"{path} seed {n}", v) for n, v in enumerate(fs.seeds, 1))
        return seedlint.LintSet(path, role, seeds)
    fmt = valuefiles.structure(path, data)
    if fmt is None:
        if select is not None:
            raise BadInput(f"--select given for seed file {path}, a plain file of one seed a "
                           "line; drop --select for it")
        seeds = tuple(seedlint.SeedAt(f"{path}:{line}", v) for line, v in read_seed_lines(path))
        return seedlint.LintSet(path, role, seeds)
    got = []
    for v in valuefiles.values(data, path, fmt, select):
        n = seedlint.as_seed(v.text)
        if n is None:
            at = f"line {v.where}" if fmt == "csv" else \
                f"{v.where} (line {v.line})" if v.line else v.where
            raise BadInput(f"seed file {path}: {at} is not a seed (a whole number from 0 to "
                           "2^64-1); select the seeds only")
        got.append(seedlint.SeedAt(f"{path}:{v.where}", n))
    return seedlint.LintSet(path, role, tuple(got))


def role_and_path(arg: str) -> tuple[str, str]:
    """`practice=held.txt` -> ("practice", "held.txt"); a FILE without a known ROLE= is held-out."""
    from plimsoll_ci.grading import seedlint

    role, sep, path = arg.partition("=")
    if not sep or role not in seedlint.ROLES:
        return "held-out", arg
    return role, path


def _lint(args: argparse.Namespace) -> int:
    from plimsoll_ci import valuefiles
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading import seedlint

    limit = args.horizon  # parsed and bounded by `horizon`, argparse's type
    left = list(args.select)
    sets = []
    for a in args.files:
        path = role_and_path(a)[1]
        data = valuefiles.read(path, "seed file")
        structured = not _seed_set_file(data) and valuefiles.structure(path, data) is not None
        expr = left.pop(0) if left and structured else None
        sets.append(lint_set(a, expr, data))
    if left:
        raise BadInput(f"--select given {len(args.select)} time(s) for "
                       f"{len(args.select) - len(left)} YAML, JSON, TOML or CSV file(s): give it "
                       "once per such file, in the order of the files")
    from plimsoll_ci.names import shown

    findings = seedlint.lint(sets, limit)
    for line in seedlint.lines(findings):
        print(shown(line))  # a set's name is its file's path
    total = sum(len(s.seeds) for s in sets)
    if findings:
        print(f"plimsoll-ci seeds lint: {len(findings)} finding(s) in {total} seeds "
              f"({seedlint.summary(findings)}); no seed is shown", file=sys.stderr)
        return 1
    print(f"plimsoll-ci seeds lint: {total} seeds in {len(sets)} set(s): no finding "
          f"(horizon {seedlint.power_text(limit)})", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch to the action."""
    return {"draw": _draw, "commit": _commit, "reveal": _reveal, "check": _check,
            "lint": _lint}[args.action](args)
