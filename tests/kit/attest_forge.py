"""Shared by the attest tests: small bundles, fixed keys, and lines forged with a real key."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kit import attest_demo as demo
from plimsoll_ci.attest import bundle, canonical, dsse, keys, record


def fixed_signer(seed: int) -> keys.Signer:
    """A deterministic test key (Ed25519 signatures are deterministic too)."""
    private = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    public = private.public_key()
    return keys.Signer(private, keys.PublicKey(public, keys.keyid_of(public)))


def small_bundle(tmp_path: Path, signer: keys.Signer, count: int = 2, flights: int = 1) -> bytes:
    """A bundle of `count` small demo records; its bytes."""
    path = tmp_path / "small.intoto.jsonl"
    bundle.append_runs(path, [demo.demo_run(i, flights=flights) for i in range(count)], signer)
    return path.read_bytes()


def lines_of(data: bytes) -> list[bytes]:
    """The lines of a bundle, each with its newline."""
    return data.splitlines(keepends=True)


def forge_record_line(index: int, previous: str, result: object, predicate: dict,
                      signer: keys.Signer) -> bytes:
    """A record line signed by `signer` without any of append_run's checks (a dishonest writer)."""
    statement = {
        "_type": record.STATEMENT_TYPE,
        "predicate": predicate,
        "predicateType": record.PREDICATE_TYPE,
        "subject": [{"digest": {"sha256": record.result_digest(result)}, "name": record.RESULT_NAME}],
    }
    envelope = dsse.sign(canonical.dumps(statement), signer)
    doc = {"envelope": envelope, "index": index, "kind": "record", "previous": previous,
           "result": result}
    return canonical.dumps(doc) + b"\n"


def seal(record_lines: list[bytes], signer: keys.Signer) -> bytes:
    """Record lines plus a checkpoint signed by `signer` over them."""
    head = bundle.line_digest(record_lines[-1].rstrip(b"\n"))
    checkpoint = bundle._checkpoint_line(len(record_lines), head, signer)
    return b"".join(record_lines) + checkpoint + b"\n"


def resign_line(line: bytes, signer: keys.Signer, keyid: str | None = None) -> bytes:
    """The same line with its envelope re-signed by `signer` (optionally claiming `keyid`)."""
    doc = canonical.loads(line.rstrip(b"\n"))
    payload = canonical.b64decode(doc["envelope"]["payload"])
    envelope = dsse.sign(payload, signer)
    if keyid is not None:
        envelope["signatures"][0]["keyid"] = keyid
    doc["envelope"] = envelope
    return canonical.dumps(doc) + b"\n"


def problem_lines(report: bundle.Report) -> list[int]:
    """The line numbers of every problem, in order."""
    return [p.line for p in report.problems]
