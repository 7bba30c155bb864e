"""`plimsoll-ci keygen --out PREFIX`: write PREFIX.key (PKCS#8 PEM, 0600) and PREFIX.pub (PKIX PEM)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--out PREFIX`."""
    parser.add_argument(
        "--out", required=True, metavar="PREFIX",
        help="write PREFIX.key (private, mode 0600) and PREFIX.pub; never overwrites either",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json: the two paths and the key id")


def run(args: argparse.Namespace) -> int:
    """Make an Ed25519 key pair; print where it went and its key id."""
    from plimsoll_ci.attest.keys import write_keypair

    signer = write_keypair(args.out)
    if args.format == "json":
        import json

        print(json.dumps({"private_key": f"{args.out}.key", "public_key": f"{args.out}.pub",
                          "key_id": signer.keyid}, indent=2))
        return 0
    print(f"wrote {args.out}.key (private key, mode 0600: keep it secret, or in a CI secret)")
    print(f"wrote {args.out}.pub (public key: give it to whoever verifies your bundles)")
    print(f"key id: {signer.keyid}")
    return 0
