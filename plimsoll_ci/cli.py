"""`plimsoll-ci`: parse arguments and dispatch; every command lives in `plimsoll_ci/commands/`.

Only the chosen command's module is imported, so a cold start stays fast (issue 2: <= 150 ms).
Each command module exposes `add_arguments(parser)` and `run(args) -> int`, and imports its heavy
dependencies inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence

from plimsoll_ci import __version__

# name -> (module, one-line help). Order is the order `--help` lists them in.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("plimsoll_ci.commands.demo", "run the main job on the bundled example"),
    "init": ("plimsoll_ci.commands.init", "set a harness repository up: config, key, hooks"),
    "scan": ("plimsoll_ci.commands.scan", "ship scan: find withheld values in what ships"),
    "withheld": ("plimsoll_ci.commands.withheld", "build or inspect a withheld set"),
    "baseline": ("plimsoll_ci.commands.baseline",
                 "write a baseline of findings already dealt with, from a JSON report"),
    "ship": ("plimsoll_ci.commands.ship", "list what a ship set would ship"),
    "hook": ("plimsoll_ci.commands.hook", "pre-commit entry points"),
    "history": ("plimsoll_ci.commands.history", "replay git history: first leak, fix, windows"),
    "fly": ("plimsoll_ci.commands.fly", "fly a trusted controller in-process"),
    "grade": ("plimsoll_ci.commands.grade", "grade an untrusted controller in a sandbox"),
    "squeeze": ("plimsoll_ci.commands.squeeze", "grade a loop against its rebuilds; verify it"),
    "seeds": ("plimsoll_ci.commands.seeds", "draw, commit, reveal, check and lint seed sets"),
    "keygen": ("plimsoll_ci.commands.keygen", "make an Ed25519 signing key pair"),
    "verify": ("plimsoll_ci.commands.verify", "verify a signed bundle of run records"),
    "bundle": ("plimsoll_ci.commands.bundle", "merge the shards of a squeeze plan into one bundle"),
    "sealed": ("plimsoll_ci.commands.sealed", "build a sealed set for the tripwire"),
    "tripwire": ("plimsoll_ci.commands.tripwire", "find sealed values in recorded requests"),
    "canary": ("plimsoll_ci.commands.canary", "make or check canary markers"),
    "record": ("plimsoll_ci.commands.record", "recording reverse proxy for model endpoints"),
    "eval": ("plimsoll_ci.commands.eval", "coding-model task attempts in sandboxed repo copies"),
}


# name -> what each exit code means, shown at the end of the command's (and its actions') --help.
EXIT_CODES: dict[str, str] = {
    "demo": "0 the planted leak was found (and the gradings ran), 1 it was not found, 2 bad input",
    "init": "0 set up (files written), 2 bad input or something already there (nothing written)",
    "scan": "0 nothing withheld ships (or findings in warn mode), 1 findings in refuse mode, "
            "2 bad input (a missing path, a bad or keyed set without its key, an unwritable "
            "report), or a failing builder's own code",
    "withheld": "0 set written or listed, 2 bad input (an unreadable values file, a bad set, "
                "a wrong key)",
    "baseline": "0 baseline written, 2 bad input (a report that is not a JSON report of scan "
                "or history, a bad baseline or withheld set; nothing written)",
    "ship": "0 listed, 2 bad input (no config, a config error), or a failing builder's own code",
    "hook": "0 pass, 1 refused, 2 bad input (no config, a missing or wrong key, a set with no "
            "entries, a ship set that ships nothing), or a failing builder's own code",
    "history": "0 nothing withheld shipped in the range, 1 something did, 2 bad input",
    "fly": "0 flown (whatever the flights' outcomes), 2 bad input",
    "grade": "0 graded, 1 refused (the controller carries a sealed value), 2 bad input or no "
             "sandbox at the tier asked for, 130/143 stopped by SIGINT/SIGTERM",
    "squeeze": "run: 0 every grading signed and written (whatever the verdicts), 130/143 "
               "stopped by SIGINT/SIGTERM; plan: 0 plan written; k8s: 0 manifests written; "
               "verify: 0 verified, 1 something disagrees; 2 bad input",
    "bundle": "merge: 0 merged (one bundle and every artifact written), 2 bad input (a shard "
              "that does not verify or did not finish, a slice missing or twice, shards of two "
              "plans; nothing written)",
    "seeds": "0 done (drawn, committed, revealed, matching, or a clean lint), 1 a reveal that "
             "does not match its commitment or a lint finding, 2 bad input",
    "eval": "0 the run finished (whatever the scores), 1 refused (the copy holds a withheld "
            "entry) or the tripwire found a sealed value in a request, 2 bad input or no "
            "sandbox at the tier asked for, 130/143 stopped by SIGINT/SIGTERM",
    "keygen": "0 key pair written, 2 bad input (a file exists: a key is never overwritten)",
    "verify": "0 verified, 1 does not verify (every problem listed), 2 bad input",
    "sealed": "0 set written or listed, 2 bad input",
    "tripwire": "0 no sealed value in the requests (or hits in warn mode), 1 sealed values "
                "found, 2 bad input",
    "canary": "make: 0 written; check: 0 every marker planted and none sent, 1 otherwise; "
              "2 bad input",
    "record": "0 stopped (Ctrl-C), 2 bad input (a bad port, an address in use)",
}


class _Paragraphs(argparse.HelpFormatter):
    """argparse's wrapping, paragraph by paragraph (a blank line in a description or epilog
    stays a blank line)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(_Paragraphs, self)._fill_text(p, width, indent)
                             for p in text.split("\n\n"))


def _epilog(parser: argparse.ArgumentParser, codes: str) -> None:
    """Add `exit codes: ...` to the help of `parser` and of every action under it."""
    text = f"exit codes: {codes}"
    parser.epilog = f"{parser.epilog}\n\n{text}" if parser.epilog else text
    parser.formatter_class = _Paragraphs
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _epilog(child, codes)


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
            p.set_defaults(_run=mod.run, _quick_exit=getattr(mod, "QUICK_EXIT", False))
            if name in EXIT_CODES:
                _epilog(p, EXIT_CODES[name])
    return parser


def unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[
        argparse.ArgumentParser, list[str]]:
    """Option-like words of `argv` that no parser on the chosen path knows (argparse itself
    would report missing required arguments first and never name them), and the deepest parser
    reached. A unique prefix of a long option counts as known, as argparse takes it."""
    p, unknown = parser, []
    for tok in argv:
        if tok == "--":
            break
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not tok.startswith("-") or tok == "-":
            if subs and tok in subs[0].choices:
                p = subs[0].choices[tok]
            continue
        if p._negative_number_matcher.match(tok):
            continue
        name = tok.split("=", 1)[0]
        known = p._option_string_actions
        if name in known or (name.startswith("--")
                             and any(o.startswith(name) for o in known if o.startswith("--"))):
            continue
        if not name.startswith("--") and name[:2] in known:
            continue  # -oFILE: a short option with its value attached
        unknown.append(tok)
    return p, unknown


def program() -> int:
    """The `plimsoll-ci` program (its console script, `python -m plimsoll_ci`): `main`, and a
    command whose module says so (`QUICK_EXIT`) ends the process as soon as its output is out."""
    return main(program=True)


# The exit code of a program whose reader went away (`... | head`): 128 + SIGPIPE, as a shell
# reports git's.
BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None, *, program: bool = False,
         prog: str = "plimsoll-ci") -> int:
    """Entry point of `plimsoll-ci`; returns the exit code. With `program`, a command that leaves
    nothing open when it returns (its module's `QUICK_EXIT`) ends the process there: the
    interpreter's teardown of what it built (a history replay's records and verdicts: 0.05-0.1 s)
    is skipped. A reader that closes the pipe early (`| head`) ends the program quietly with
    `BROKEN_PIPE`, whatever the command was printing."""
    try:
        return _main(argv, program, prog)
    except BrokenPipeError:
        return _reader_gone()
    except SystemExit:  # argparse's --help and usage errors: what they printed goes out now
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return _reader_gone()
        raise


def _reader_gone() -> int:
    """stdout's reader went away: point stdout at /dev/null so that the interpreter's last flush
    of what is still buffered cannot fail again (and print a traceback), and say nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return BROKEN_PIPE


def _main(argv: Sequence[str] | None, program: bool, prog: str) -> int:
    from plimsoll_ci.errors import PlimsollError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv, prog)
    where, unknown = unknown_options(parser, argv)
    if unknown:
        where.error(f"unrecognized arguments: {' '.join(unknown)}")
    args, extra = parser.parse_known_args(argv)
    if extra:  # a stray argument may be a key pasted in the wrong place: counted, not repeated
        parser.error(f"{len(extra)} argument{'s' if len(extra) != 1 else ''} the command does "
                     "not take (not repeated here, in case one is a key); check the command "
                     "line against --help")
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help()
        return 2
    try:
        _check_secret_names(args)
        code = int(run(args))
    except PlimsollError as e:
        from plimsoll_ci.names import shown

        # a message names files, folders and controllers: user input, printed through `shown`
        # (a line break in a name included), so no name drives the terminal or forges a line
        details = getattr(e, "details", ())
        head = str(e.args[0]) if details and e.args else str(e)
        print("plimsoll-ci: error: " + "\n  ".join(shown(x) for x in (head, *details)),
              file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("plimsoll-ci: interrupted", file=sys.stderr)
        return 130
    sys.stdout.flush()  # here, where a reader that went away is caught, not at the exit
    if program and args._quick_exit:
        _exit_now(code)
    return code


def _check_secret_names(args: argparse.Namespace) -> None:
    """Every flag that says where a secret is (`--key-env`, `--signing-key-env`, `--api-key-env`,
    `--sealed-key-env`, ...: each `*_env` argument) takes a variable's name; anything else is
    refused here, before any work, and never repeated (it may be the key itself)."""
    from plimsoll_ci.envname import variable

    for dest, value in sorted(vars(args).items()):
        if dest.endswith("_env") and isinstance(value, str):
            variable(value, "--" + dest.replace("_", "-"))


def _exit_now(code: int) -> None:
    """End this process with `code` once stdout and stderr are flushed (when they cannot be, the
    interpreter's own exit reports it)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        os._exit(_reader_gone())
    except (OSError, ValueError):
        return
    os._exit(code)


def _single_dash(argv: Sequence[str], long_flags: Sequence[str]) -> list[str]:
    """Turn Go-style `-flag` into `--flag` for the compatible fronts (`-o` stays the short
    option it already is)."""
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
    flags = ["mode", "values", "file", "source", "set", "format", "output", "key-env", "key-file"]
    argv = _single_dash(argv, flags)
    if argv and argv[0] == "build":
        return main(["withheld", *argv])
    if argv and argv[0] == "scan":  # the tool's `-set FILE` is the withheld set's file
        return main([("--withheld" + a[len("--set"):]) if a == "--set" or a.startswith("--set=")
                     else a for a in argv])
    if argv and argv[0] in ("-h", "--help"):
        print("usage: plimsoll-withheld build|scan [flags]\n\n`plimsoll-withheld build "
              "--help` and `scan --help` list the flags (those of `plimsoll-ci withheld build` "
              "and `plimsoll-ci scan`, single-dash).")
        return 0
    print("usage: plimsoll-withheld build|scan [flags]", file=sys.stderr)
    return 2


EVAL_INTEGRITY_HELP = """\
usage: plimsoll-eval-integrity canary make|check [flags]

Plant canary markers where secrets live, then check that none reached a model (the same
command as `plimsoll-ci canary`, with single-dash flags). `plimsoll-eval-integrity canary make
--help` and `canary check --help` list the flags.
"""


def eval_integrity_main(argv: Sequence[str] | None = None) -> int:
    """`plimsoll-eval-integrity canary make|check`, the same flags as `plimsoll-ci canary`; its
    `--help` is its own (one command), never the whole of `plimsoll-ci`'s."""
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = ["sealed", "planted", "requests", "kind", "format"]
    if argv and argv[0] == "canary":
        return main(_single_dash(argv, flags), prog="plimsoll-eval-integrity")
    if argv and argv[0] in ("-h", "--help"):
        try:
            sys.stdout.write(EVAL_INTEGRITY_HELP)
            sys.stdout.flush()
        except BrokenPipeError:
            return _reader_gone()
        return 0
    if argv and argv[0] == "--version":
        print(f"plimsoll-eval-integrity {__version__}")
        return 0
    sys.stderr.write(EVAL_INTEGRITY_HELP.split("\n\n")[0] + "\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
