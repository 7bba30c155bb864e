"""Our envelopes are plain DSSE v1: the spec's PAE vector, and securesystemslib verifies them."""

from __future__ import annotations

import copy

import pytest
from kit.attest_forge import fixed_signer, lines_of, small_bundle
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from plimsoll_ci.attest import canonical, dsse, record

SIGNER = fixed_signer(3)
FOREIGN = fixed_signer(4)


def sslib_key(signer) -> SSlibKey:
    # securesystemslib's default key id is its own hash; we pin ours (SHA-256 of the DER).
    return SSlibKey.from_crypto(signer.public.key, keyid=signer.keyid)


def test_pae_matches_the_dsse_spec_test_vector():
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_bytes_not_characters():
    assert dsse.pae("t\u00e9", b"\xff") == b"DSSEv1 3 t\xc3\xa9 1 \xff"


def test_pae_agrees_with_securesystemslib():
    env = Envelope(b"hello world", "http://example.com/HelloWorld", {})
    assert env.pae() == dsse.pae("http://example.com/HelloWorld", b"hello world")


def test_every_envelope_in_a_bundle_verifies_with_securesystemslib(tmp_path):
    data = small_bundle(tmp_path, SIGNER, count=3)
    for line in lines_of(data):
        doc = canonical.loads(line.rstrip(b"\n"))
        envelope = Envelope.from_dict(copy.deepcopy(doc["envelope"]))
        accepted = envelope.verify([sslib_key(SIGNER)], 1)
        assert list(accepted) == [SIGNER.keyid]
        assert envelope.payload_type == dsse.IN_TOTO_PAYLOAD_TYPE
        statement = canonical.loads(envelope.payload)
        assert statement["_type"] == "https://in-toto.io/Statement/v1"
        if doc["kind"] == "record":
            assert statement["predicateType"] == record.PREDICATE_TYPE
            assert statement["subject"][0]["digest"]["sha256"] == record.result_digest(doc["result"])


def test_securesystemslib_refuses_our_envelope_under_another_key_or_edited(tmp_path):
    doc = canonical.loads(lines_of(small_bundle(tmp_path, SIGNER, count=1))[0].rstrip(b"\n"))
    with pytest.raises(VerificationError):
        Envelope.from_dict(copy.deepcopy(doc["envelope"])).verify([sslib_key(FOREIGN)], 1)
    edited = copy.deepcopy(doc["envelope"])
    edited["payload"] = canonical.b64encode(canonical.b64decode(edited["payload"]) + b" ")
    with pytest.raises(VerificationError):
        Envelope.from_dict(edited).verify([sslib_key(SIGNER)], 1)


def test_an_envelope_signed_by_securesystemslib_opens_with_ours():
    from securesystemslib.signer import CryptoSigner

    theirs = CryptoSigner(SIGNER.private_key, sslib_key(SIGNER))
    env = Envelope(b'{"a":1}', dsse.IN_TOTO_PAYLOAD_TYPE, {})
    env.sign(theirs)
    opened = dsse.open_envelope(env.to_dict(), SIGNER.public)
    assert opened == dsse.Opened(b'{"a":1}', [])


def test_key_id_is_the_sha256_of_the_public_key_der():
    import hashlib

    from cryptography.hazmat.primitives import serialization

    der = SIGNER.public.key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert SIGNER.keyid == hashlib.sha256(der).hexdigest()
    env = dsse.sign(b"x", SIGNER)
    assert env["signatures"][0]["keyid"] == SIGNER.keyid


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda e: e.__setitem__("payloadType", "application/json"), "payload type"),
        (lambda e: e["signatures"].append(dict(e["signatures"][0])), "exactly one signature"),
        (lambda e: e.__setitem__("signatures", []), "exactly one signature"),
        (lambda e: e.__setitem__("extra", 1), "exactly"),
        (lambda e: e["signatures"][0].__setitem__("sig", "QR=="), "base64"),
    ],
)
def test_open_envelope_refuses_a_malformed_envelope(edit, reason):
    env = dsse.sign(b"x", SIGNER)
    edit(env)
    opened = dsse.open_envelope(env, SIGNER.public)
    assert opened.payload is None
    assert any(reason in p for p in opened.problems), opened.problems


def test_base64_with_a_non_canonical_tail_is_refused():
    assert canonical.b64decode("QQ==") == b"A"
    with pytest.raises(canonical.NotCanonical):
        canonical.b64decode("QR==")  # decodes to b"A" too, but a writer never writes it
