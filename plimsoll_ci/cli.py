"""`plimsoll-ci`: parse arguments and dispatch; every command lives in `plimsoll_ci/commands/`.

Only the chosen command's module is imported, so a cold start stays fast (issue 2: <= 150 ms).
Each command module exposes `add_arguments(parser)` and `run(args) -> int`, and imports its heavy
dependencies inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from plimsoll_ci import __version__

# name -> (module, one-line help). Order is the order `--help` lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("plimsoll_ci.commands.demo", "run the main job on the bundled example"),
    "scan": ("plimsoll_ci.commands.scan", "ship scan: find withheld values in what ships"),
    "withheld": ("plimsoll_ci.commands.withheld", "build or inspect a withheld set"),
    "ship": ("plimsoll_ci.commands.ship", "list what a ship set would ship"),
    "hook": ("plimsoll_ci.commands.hook", "pre-commit entry points"),
    "history": ("plimsoll_ci.commands.history", "replay git history: first leak, fix, windows"),
    "fly": ("plimsoll_ci.commands.fly", "fly a trusted controller in-process"),
    "grade": ("plimsoll_ci.commands.grade", "grade an untrusted controller in a sandbox"),
    "squeeze": ("plimsoll_ci.commands.squeeze", "grade a loop against its rebuilds; verify it"),
    "seeds": ("plimsoll_ci.commands.seeds", "draw, commit, reveal, check and lint seed sets"),
    "keygen": ("plimsoll_ci.commands.keygen", "make an Ed25519 signing key pair"),
    "verify": ("plimsoll_ci.commands.verify", "verify a signed bundle of run records"),
    "sealed": ("plimsoll_ci.commands.sealed", "build a sealed set for the tripwire"),
    "tripwire": ("plimsoll_ci.commands.tripwire", "find sealed values in recorded requests"),
    "canary": ("plimsoll_ci.commands.canary", "make or check canary markers"),
    "record": ("plimsoll_ci.commands.record", "recording reverse proxy for model endpoints"),
    "eval": ("plimsoll_ci.commands.eval", "coding-model task attempts in sandboxed repo copies"),
}


def _available() -> dict[str, tuple[str, str]]:
    found = {}
    for name, (module, help_text) in COMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            found[name] = (module, help_text)
    return found


def _chosen(argv: Sequence[str], names: Sequence[str]) -> str | None:
    for arg in argv:
        if arg in names:
            return arg
        if not arg.startswith("-"):
            return None
    return None


def build_parser(argv: Sequence[str], prog: str = "plimsoll-ci") -> argparse.ArgumentParser:
    """Build the parser; only the command named in `argv` gets its module imported, and then
    only its sub-parser is built (the whole list is for `--help` and for a wrong command)."""
    chosen = _chosen(argv, list(COMMANDS))
    if chosen is not None and importlib.util.find_spec(COMMANDS[chosen][0]) is not None:
        commands = {chosen: COMMANDS[chosen]}
    else:
        commands = _available()
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Keep answer keys out of AI agents' sandboxes, and prove it.",
    )
    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            mod = importlib.import_module(module)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `plimsoll-ci`; returns the exit code."""
    from plimsoll_ci.errors import PlimsollError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    try:
        return int(run(args))
    except PlimsollError as e:
        print(f"plimsoll-ci: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("plimsoll-ci: interrupted", file=sys.stderr)
        return 130


def _single_dash(argv: Sequence[str], long_flags: Sequence[str]) -> list[str]:
    """Turn Go-style `-flag` into `--flag` for the compatible fronts."""
    out = []
    for arg in argv:
        head, eq, tail = arg.partition("=")
        if head.startswith("-") and not head.startswith("--") and head[1:] in long_flags:
            arg = "-" + head + (eq + tail if eq else "")
        out.append(arg)
    return out


def withheld_main(argv: Sequence[str] | None = None) -> int:
    """`plimsoll-withheld build|scan` with single-dash flags, as the hackathon's tool had them."""
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = ["mode", "values", "file", "source", "set", "format", "output", "key-env", "key-file", "o"]
    argv = _single_dash(argv, flags)
    if argv and argv[0] == "build":
        return main(["withheld", *argv])
    if argv and argv[0] == "scan":
        return main(argv)
    print("usage: plimsoll-withheld build|scan [flags]", file=sys.stderr)
    return 2


def eval_integrity_main(argv: Sequence[str] | None = None) -> int:
    """`plimsoll-eval-integrity canary make|check`, the same flags as `plimsoll-ci canary`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = ["sealed", "planted", "requests", "kind", "o", "format"]
    return main(_single_dash(argv, flags))


if __name__ == "__main__":
    raise SystemExit(main())
