"""Run records: in-toto Statements in DSSE envelopes, a hash-chained bundle, and its verifier.

Public entry points (the CLI is a thin layer over them):

- `plimsoll_ci.attest.keys.load_signer(key_file=..., key_env=..., ephemeral_pub_out=...)`
- `plimsoll_ci.attest.record.make_predicate(...)`
- `plimsoll_ci.attest.bundle.append_run(bundle_path, result_doc, predicate, signer)`
- `plimsoll_ci.attest.bundle.verify_bundle(bundle_path, public_key, expect_count=None)`
- `plimsoll_ci.attest.pinned.verify_pinned(data, pin(["job.pub"]))`: under a key given, never
  one found beside the records

Signing happens on the trusted side, over digests this process recomputed itself.
"""

from __future__ import annotations
