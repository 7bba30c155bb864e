"""The signing flags of commands that write run records (`grade --bundle FILE --signing-key-...`).

`--signing-key-file FILE` / `--signing-key-env VAR` / `--ephemeral-key PUB_OUT` name the Ed25519
key that signs; `--key-env` names an HMAC key elsewhere (scan, withheld, tripwire), so the old
spellings `--key` / `--key-env` still work here but print a deprecation warning. Imports nothing
heavy, so `add_arguments` stays fast at parse time.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

_RENAMED = {"--key": "--signing-key-file", "--key-env": "--signing-key-env"}


class _Deprecated(argparse.Action):
    """An old spelling: stores into the new flag's place and remembers that it was used."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        used = list(getattr(namespace, "deprecated_flags", None) or [])
        namespace.deprecated_flags = [*used, option_string]


def add_signing_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `--bundle`, and `--signing-key-file` / `--signing-key-env` / `--ephemeral-key` (one of
    them with a bundle), plus the deprecated `--key` / `--key-env`."""
    from plimsoll_ci.commands._grading_flags import add_signing_key_arguments

    group = parser.add_argument_group("signed run records")
    group.add_argument(
        "--bundle", metavar="FILE",
        help="append a signed run record to this bundle (.intoto.jsonl; created if missing)",
    )
    keys = group.add_mutually_exclusive_group()
    add_signing_key_arguments(keys)
    keys.add_argument("--ephemeral-key", metavar="PUB_OUT",
                      help="sign with a key made for this run; write only its public half to "
                           "PUB_OUT")
    keys.add_argument("--key", dest="signing_key_file", metavar="FILE", action=_Deprecated,
                      help="deprecated spelling of --signing-key-file")
    keys.add_argument("--key-env", dest="signing_key_env", metavar="VAR", action=_Deprecated,
                      help="deprecated spelling of --signing-key-env")
    parser.set_defaults(deprecated_flags=[])


def signer_from_args(args: argparse.Namespace, prog: str = "plimsoll-ci"):
    """The signer the flags ask for, or None without `--bundle`; warns on stderr for each old
    spelling used (BadInput when the flags are inconsistent)."""
    from plimsoll_ci.attest.options import SigningOptions, signer_for

    for old in args.deprecated_flags:
        print(f"{prog}: warning: {old} is deprecated here (elsewhere it names an HMAC key); "
              f"use {_RENAMED[old]}", file=sys.stderr)
    return signer_for(SigningOptions(args.bundle, args.signing_key_file, args.signing_key_env,
                                     args.ephemeral_key))
