"""Ed25519 keys: make a pair, load a signer (file, environment variable, or ephemeral), load a public key.

A private key never comes from argv (it would show in `ps` and in shell history) and a key file is
never overwritten. The key id is the SHA-256 of the public key's DER (SubjectPublicKeyInfo), in hex.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from plimsoll_ci.envname import said, variable
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import cannot_read, read_bounded

MAX_KEY_BYTES = 64 * 1024  # a PEM key is a few hundred bytes; anything bigger is not a key


class PublicKey(NamedTuple):
    """A verifying key and its key id."""

    key: Ed25519PublicKey
    keyid: str

    def verify(self, signature: bytes, data: bytes) -> bool:
        """True when `signature` is this key's Ed25519 signature over `data`."""
        try:
            self.key.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def der(self) -> bytes:
        """The DER SubjectPublicKeyInfo of this key (what the key id hashes)."""
        return self.key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def pem(self) -> bytes:
        """The PKIX (SubjectPublicKeyInfo) PEM of this key."""
        return self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class Signer(NamedTuple):
    """A signing key, its public half, and whether it was made for this run only."""

    private_key: Ed25519PrivateKey
    public: PublicKey
    ephemeral: bool = False

    @property
    def keyid(self) -> str:
        """The key id of the public half."""
        return self.public.keyid

    def sign(self, data: bytes) -> bytes:
        """The Ed25519 signature over `data`."""
        return self.private_key.sign(data)


def keyid_of(key: Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the public key's DER SubjectPublicKeyInfo."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def _public(key: Ed25519PublicKey) -> PublicKey:
    return PublicKey(key, keyid_of(key))


def public_key_from_der(der: bytes) -> PublicKey:
    """A PublicKey from its DER SubjectPublicKeyInfo (ValueError if not Ed25519)."""
    key = serialization.load_der_public_key(der)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return _public(key)


def generate() -> Signer:
    """A new Ed25519 key pair, held in memory only."""
    private = Ed25519PrivateKey.generate()
    return Signer(private, _public(private.public_key()))


def _private_pem(private: Ed25519PrivateKey) -> bytes:
    return private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create `path` with `mode`; refuse if anything is already there (O_EXCL, no race)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise BadInput(
            f"file {path}: already exists; a key file is never overwritten, pick another path"
        ) from None
    except OSError as e:
        raise BadInput(f"file {path}: cannot create ({e.strerror})") from None
    try:
        os.fchmod(fd, mode)  # the umask may have taken bits away; set exactly what we mean
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
            f.flush()
            os.fsync(fd)
    finally:
        os.close(fd)


def write_keypair(prefix: str | os.PathLike[str]) -> Signer:
    """Make a key pair; write `PREFIX.key` (PKCS#8 PEM, mode 0600) and `PREFIX.pub` (PKIX PEM).

    Refuses (BadInput) when either file exists, before writing anything.
    """
    prefix = str(prefix)
    key_path, pub_path = Path(prefix + ".key"), Path(prefix + ".pub")
    for path in (key_path, pub_path):
        if path.exists() or path.is_symlink():
            raise BadInput(
                f"file {path}: already exists; keygen never overwrites a key, pick another --out"
            )
    if not key_path.parent.is_dir():
        raise BadInput(f"folder {key_path.parent}: does not exist; create it first")
    signer = generate()
    _write_new(key_path, _private_pem(signer.private_key), 0o600)
    try:
        _write_new(pub_path, signer.public.pem(), 0o644)
    except BadInput:
        key_path.unlink()  # we created it a moment ago; leave no half pair behind
        raise
    return signer


def _parse_private(data: bytes, where: str) -> Signer:
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise BadInput(
            f"{where}: the private key is encrypted; give an unencrypted PKCS#8 PEM "
            "(keep it in a secret store or a 0600 file instead)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise BadInput(
            f"{where}: not a PEM private key; make one with `plimsoll-ci keygen --out PREFIX`"
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise BadInput(f"{where}: not an Ed25519 key; make one with `plimsoll-ci keygen`")
    return Signer(private, _public(private.public_key()))


def load_signer(
    key_file: str | os.PathLike[str] | None = None,
    key_env: str | None = None,
    ephemeral_pub_out: str | os.PathLike[str] | None = None,
) -> Signer:
    """The signer for a run: exactly one of a key file, an environment variable, or ephemeral.

    - `key_file`: a PKCS#8 PEM file that only its owner can read (mode 0600 or stricter).
    - `key_env`: the name of an environment variable holding the PEM text (never the key itself).
    - `ephemeral_pub_out`: make a key for this run only; write its public half (PKIX PEM) to this
      path, which must not exist. The private half is never written anywhere.
    """
    given = [x is not None for x in (key_file, key_env, ephemeral_pub_out)]
    if sum(given) != 1:
        raise BadInput(
            "signing key: give exactly one of --signing-key-file FILE, --signing-key-env VAR or "
            "--ephemeral-key PUB_OUT"
        )
    if key_file is not None:
        path = Path(key_file)
        if not os.path.lexists(path):
            raise BadInput("--signing-key-file: cannot read: no such file (the path given is not "
                           "repeated, in case it is the key itself); give the path of the "
                           "private key file")
        try:
            st = path.stat()
        except OSError as e:
            raise BadInput(f"key file {path}: {cannot_read(e)}") from None
        if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise BadInput(
                f"key file {path}: readable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"run `chmod 600 {path}`"
            )
        data = read_bounded(path, MAX_KEY_BYTES, f"key file {path}")
        return _parse_private(data, f"key file {path}")
    if key_env is not None:
        value = os.environ.get(variable(key_env, "--signing-key-env"))
        if not value:
            raise BadInput(
                f"--signing-key-env {said(key_env)}: the environment variable is not set or "
                "empty; put the private key's PEM text in it (for example from a CI secret)"
            )
        return _parse_private(value.encode("utf-8"), f"environment variable {key_env}")
    signer = generate()._replace(ephemeral=True)
    # (exactly one flag is given, checked above: here it is --ephemeral-key)
    _write_new(Path(ephemeral_pub_out), signer.public.pem(), 0o644)  # type: ignore[arg-type]
    return signer


def load_public_key(path: str | os.PathLike[str], follow: bool = True) -> PublicKey:
    """Read a PKIX PEM Ed25519 public key (a `.pub` from keygen or an ephemeral run).

    Bounded (`MAX_KEY_BYTES`, a regular file only); `follow=False` refuses a link.
    """
    path = Path(path)
    data = read_bounded(path, MAX_KEY_BYTES, f"public key {path}", follow)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise BadInput(
            f"public key {path}: not a PEM public key; pass the .pub file written by keygen"
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise BadInput(f"public key {path}: not an Ed25519 key")
    return _public(key)
