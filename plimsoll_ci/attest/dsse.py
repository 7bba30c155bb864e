"""DSSE v1 envelopes: the pre-authentication encoding, signing, and strict verification.

PAE (https://github.com/secure-systems-lab/dsse/blob/master/protocol.md):

    "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

with LEN the length in bytes as ASCII decimal without leading zeros. We write exactly one
signature per envelope, `{"keyid", "sig"}`, standard padded base64.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical
from plimsoll_ci.attest.keys import PublicKey, Signer

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """The DSSE v1 pre-authentication encoding of (payload type, payload)."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def sign(payload: bytes, signer: Signer, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> dict:
    """A DSSE envelope (as a JSON-ready dict) over `payload`, signed by `signer`."""
    signature = signer.sign(pae(payload_type, payload))
    return {
        "payload": canonical.b64encode(payload),
        "payloadType": payload_type,
        "signatures": [{"keyid": signer.keyid, "sig": canonical.b64encode(signature)}],
    }


class Opened(NamedTuple):
    """What `open_envelope` found: the payload when it verified, and every problem otherwise."""

    payload: bytes | None
    problems: list[str]


def open_envelope(
    envelope: Any, public: PublicKey, payload_type: str = IN_TOTO_PAYLOAD_TYPE
) -> Opened:
    """Check an envelope's shape, key id and signature; the payload only when all hold."""
    if not isinstance(envelope, dict) or set(envelope) != {"payload", "payloadType", "signatures"}:
        return Opened(None, ['envelope must have exactly "payload", "payloadType", "signatures"'])
    problems = []
    if envelope["payloadType"] != payload_type:
        problems.append(f"payload type is not {payload_type}")
    try:
        payload = canonical.b64decode(envelope["payload"])
    except canonical.NotCanonical as e:
        return Opened(None, [*problems, f"envelope payload: {e}"])
    sigs = envelope["signatures"]
    if not isinstance(sigs, list) or len(sigs) != 1:
        return Opened(None, [*problems, "envelope must carry exactly one signature"])
    sig = sigs[0]
    if not isinstance(sig, dict) or set(sig) != {"keyid", "sig"}:
        return Opened(None, [*problems, 'signature must have exactly "keyid" and "sig"'])
    if sig["keyid"] != public.keyid:
        keyid = sig["keyid"] if isinstance(sig["keyid"], str) else "?"
        return Opened(
            None, [*problems, f"signed by key {keyid[:16]}..., not the given key {public.keyid[:16]}..."]
        )
    try:
        raw_sig = canonical.b64decode(sig["sig"])
    except canonical.NotCanonical as e:
        return Opened(None, [*problems, f"signature: {e}"])
    if not isinstance(envelope["payloadType"], str) or not public.verify(
        raw_sig, pae(envelope["payloadType"], payload)
    ):
        return Opened(None, [*problems, "signature does not verify"])
    if problems:
        return Opened(None, problems)
    return Opened(payload, [])
