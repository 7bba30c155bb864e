"""Keys: keygen writes a 0600 PKCS#8 key and a PKIX public key, never overwrites, never takes argv."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography.hazmat.primitives import serialization
from kit import attest_demo as demo

from plimsoll_ci.attest import bundle, keys
from plimsoll_ci.cli import main
from plimsoll_ci.errors import BadInput


def test_keygen_writes_a_0600_pkcs8_key_and_a_pkix_public_key(tmp_path, capsys):
    old = os.umask(0)  # even a permissive umask must not widen the key's mode
    try:
        assert main(["keygen", "--out", str(tmp_path / "ci")]) == 0
    finally:
        os.umask(old)
    key, pub = tmp_path / "ci.key", tmp_path / "ci.pub"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")  # PKCS#8, unencrypted
    assert pub.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")  # PKIX SubjectPublicKeyInfo
    signer = keys.load_signer(key_file=key)
    assert keys.load_public_key(pub) == signer.public
    assert signer.keyid in capsys.readouterr().out


@pytest.mark.parametrize("existing", ["ci.key", "ci.pub"])
def test_keygen_refuses_to_overwrite_either_file(tmp_path, capsys, existing):
    (tmp_path / existing).write_bytes(b"precious")
    assert main(["keygen", "--out", str(tmp_path / "ci")]) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / existing).read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]


def test_keygen_refuses_a_missing_folder_with_exit_2(tmp_path, capsys):
    assert main(["keygen", "--out", str(tmp_path / "no" / "ci")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_keygen_takes_no_key_material_on_the_command_line(capsys):
    with pytest.raises(SystemExit):
        main(["keygen", "--out", "x", "--key", "-----BEGIN PRIVATE KEY-----"])


def test_a_key_from_an_environment_variable_signs_like_the_file(tmp_path, monkeypatch):
    keys.write_keypair(tmp_path / "ci")
    monkeypatch.setenv("PLIMSOLL_TEST_SIGNING_KEY", (tmp_path / "ci.key").read_text())
    from_env = keys.load_signer(key_env="PLIMSOLL_TEST_SIGNING_KEY")
    assert from_env.public == keys.load_public_key(tmp_path / "ci.pub")


def test_an_ephemeral_key_writes_only_its_public_half(tmp_path):
    signer = keys.load_signer(ephemeral_pub_out=tmp_path / "run.pub")
    assert signer.ephemeral
    demo.write_demo_bundle(tmp_path / "run.intoto.jsonl", signer, 2)
    assert bundle.verify_bundle(tmp_path / "run.intoto.jsonl", keys.load_public_key(tmp_path / "run.pub")).ok
    private_raw = signer.private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert b"PRIVATE KEY" not in data and private_raw not in data, path
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [
        "run.intoto.jsonl", "run.pub"]


def test_an_ephemeral_public_key_is_never_overwritten(tmp_path):
    (tmp_path / "run.pub").write_bytes(b"old")
    with pytest.raises(BadInput, match="never overwritten"):
        keys.load_signer(ephemeral_pub_out=tmp_path / "run.pub")
    assert (tmp_path / "run.pub").read_bytes() == b"old"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one"),
        ({"key_file": "a", "key_env": "B"}, "exactly one"),
        ({"key_env": "PLIMSOLL_TEST_UNSET_VARIABLE"}, "not set"),
        ({"key_file": "/nonexistent/ci.key"}, "cannot read"),
    ],
)
def test_load_signer_refuses_bad_input(kwargs, message, monkeypatch):
    monkeypatch.delenv("PLIMSOLL_TEST_UNSET_VARIABLE", raising=False)
    with pytest.raises(BadInput, match=message):
        keys.load_signer(**kwargs)


def test_a_key_file_others_can_read_is_refused(tmp_path):
    keys.write_keypair(tmp_path / "ci")
    os.chmod(tmp_path / "ci.key", 0o644)
    with pytest.raises(BadInput, match="chmod 600"):
        keys.load_signer(key_file=tmp_path / "ci.key")


def test_a_public_key_or_garbage_is_refused_as_a_signing_key(tmp_path, monkeypatch):
    keys.write_keypair(tmp_path / "ci")
    monkeypatch.setenv("PLIMSOLL_TEST_SIGNING_KEY", (tmp_path / "ci.pub").read_text())
    with pytest.raises(BadInput, match="not a PEM private key") as e:
        keys.load_signer(key_env="PLIMSOLL_TEST_SIGNING_KEY")
    assert "BEGIN" not in str(e.value)  # the variable's content is never echoed
    (tmp_path / "junk.pub").write_bytes(b"junk")
    with pytest.raises(BadInput, match="not a PEM public key"):
        keys.load_public_key(tmp_path / "junk.pub")


def test_a_non_ed25519_key_is_refused(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp_path / "ec.pub").write_bytes(pem)
    with pytest.raises(BadInput, match="not an Ed25519 key"):
        keys.load_public_key(tmp_path / "ec.pub")


def _signing_args(argv):
    import argparse

    from plimsoll_ci.commands._signing import add_signing_arguments

    parser = argparse.ArgumentParser()
    add_signing_arguments(parser)
    return parser.parse_args(argv)


def test_signing_options_give_the_signer_a_grade_run_asks_for(tmp_path, monkeypatch):
    from plimsoll_ci.commands._signing import signer_from_args

    keys.write_keypair(tmp_path / "ci")
    assert signer_from_args(_signing_args([])) is None
    args = _signing_args(["--bundle", str(tmp_path / "b.intoto.jsonl"),
                          "--signing-key-file", str(tmp_path / "ci.key")])
    assert signer_from_args(args).public == keys.load_public_key(tmp_path / "ci.pub")
    monkeypatch.setenv("PLIMSOLL_TEST_SIGNING_KEY", (tmp_path / "ci.key").read_text())
    args = _signing_args(["--bundle", "b", "--signing-key-env", "PLIMSOLL_TEST_SIGNING_KEY"])
    assert signer_from_args(args).keyid == keys.load_public_key(tmp_path / "ci.pub").keyid
    args = _signing_args(["--bundle", "b", "--ephemeral-key", str(tmp_path / "run.pub")])
    assert signer_from_args(args).ephemeral and (tmp_path / "run.pub").exists()


def test_signing_options_refuse_a_bundle_without_a_key_and_a_key_without_a_bundle(tmp_path):
    from plimsoll_ci.commands._signing import signer_from_args

    with pytest.raises(BadInput, match="needs a key"):
        signer_from_args(_signing_args(["--bundle", "b"]))
    with pytest.raises(BadInput, match="without --bundle"):
        signer_from_args(_signing_args(["--signing-key-file", "ci.key"]))
    with pytest.raises(SystemExit):  # two key sources at once: argparse refuses
        _signing_args(["--bundle", "b", "--signing-key-file", "a", "--signing-key-env", "B"])
    with pytest.raises(SystemExit):  # an old spelling and a new one at once, too
        _signing_args(["--bundle", "b", "--key-env", "A", "--signing-key-env", "B"])


def test_the_old_signing_flags_still_sign_and_warn_that_they_are_deprecated(tmp_path, capsys,
                                                                            monkeypatch):
    from plimsoll_ci.commands._signing import signer_from_args

    keys.write_keypair(tmp_path / "ci")
    monkeypatch.setenv("PLIMSOLL_TEST_SIGNING_KEY", (tmp_path / "ci.key").read_text())
    for argv, new in ((["--key", str(tmp_path / "ci.key")], "--signing-key-file"),
                      (["--key-env", "PLIMSOLL_TEST_SIGNING_KEY"], "--signing-key-env")):
        signer = signer_from_args(_signing_args(["--bundle", "b", *argv]))
        assert signer.public == keys.load_public_key(tmp_path / "ci.pub")
        err = capsys.readouterr().err
        assert f"warning: {argv[0]} is deprecated" in err and new in err
    signer_from_args(_signing_args(["--bundle", "b", "--signing-key-file",
                                    str(tmp_path / "ci.key")]))
    assert "deprecated" not in capsys.readouterr().err
