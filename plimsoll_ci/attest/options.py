"""Signing options for commands that write run records (`grade --bundle FILE --key ...`).

Imports nothing heavy, so a command's `add_arguments` can call `add_signing_arguments` at parse
time without slowing the CLI's cold start.
"""

from __future__ import annotations

import argparse


def add_signing_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `--bundle`, and `--key` / `--key-env` / `--ephemeral-key` (one of them with a bundle)."""
    group = parser.add_argument_group("signed run records")
    group.add_argument(
        "--bundle", metavar="FILE",
        help="append a signed run record to this bundle (.intoto.jsonl; created if missing)",
    )
    keys = group.add_mutually_exclusive_group()
    keys.add_argument(
        "--key", metavar="FILE", help="private signing key file (PKCS#8 PEM, mode 0600)"
    )
    keys.add_argument(
        "--key-env", metavar="VAR",
        help="name of an environment variable holding the private key's PEM text",
    )
    keys.add_argument(
        "--ephemeral-key", metavar="PUB_OUT",
        help="sign with a key made for this run; write only its public half to PUB_OUT",
    )


def signer_from_args(args: argparse.Namespace):  # -> plimsoll_ci.attest.keys.Signer | None
    """The signer the options ask for, or None without `--bundle` (BadInput when inconsistent)."""
    from plimsoll_ci.errors import BadInput

    chosen = [args.key, args.key_env, args.ephemeral_key]
    if args.bundle is None:
        if any(x is not None for x in chosen):
            raise BadInput("a signing key was given without --bundle FILE; add --bundle or drop the key")
        return None
    if all(x is None for x in chosen):
        raise BadInput(
            f"--bundle {args.bundle}: needs a key: --key FILE, --key-env VAR or --ephemeral-key PUB_OUT"
        )
    from plimsoll_ci.attest.keys import load_signer

    return load_signer(key_file=args.key, key_env=args.key_env, ephemeral_pub_out=args.ephemeral_key)
