"""Signing options of a run that writes records: which bundle, and which one key signs it.

A plain record, so a command's flags, a squeeze job file or an eval harness's config all name a
signing key the same way; the argparse flags that fill it live in `commands/_signing.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from plimsoll_ci.errors import BadInput

if TYPE_CHECKING:
    from plimsoll_ci.attest.keys import Signer


class SigningOptions(NamedTuple):
    """A bundle and at most one key source (never the key itself)."""

    bundle: str | None = None  # append a signed run record to this bundle
    key_file: str | None = None  # private key file (PKCS#8 PEM, mode 0600)
    key_env: str | None = None  # name of an environment variable holding the key's PEM text
    ephemeral_pub_out: str | None = None  # sign with a one-run key; write its public half here


def signer_for(options: SigningOptions) -> Signer | None:
    """The signer the options ask for, or None without a bundle (BadInput when inconsistent)."""
    chosen = [options.key_file, options.key_env, options.ephemeral_pub_out]
    if options.bundle is None:
        if any(x is not None for x in chosen):
            raise BadInput("a signing key was given without --bundle FILE; add --bundle or drop "
                           "the key")
        return None
    if all(x is None for x in chosen):
        raise BadInput(f"--bundle {options.bundle}: needs a key: --signing-key-file FILE, "
                       "--signing-key-env VAR or --ephemeral-key PUB_OUT")
    from plimsoll_ci.attest.keys import load_signer

    return load_signer(key_file=options.key_file, key_env=options.key_env,
                       ephemeral_pub_out=options.ephemeral_pub_out)
