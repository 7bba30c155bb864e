"""Appending: locked, atomic, fsynced; a crash leaves the previous bundle; nothing bad is re-sealed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from kit import attest_demo as demo
from kit.attest_forge import fixed_signer, lines_of, resign_line

from plimsoll_ci.attest import bundle, keys, record
from plimsoll_ci.errors import BadInput

TESTS = str(Path(__file__).parents[1])  # the subprocesses below import kit.attest_demo from here
SIGNER = fixed_signer(5)
FOREIGN = fixed_signer(6)


def verify(path, expect_count=None):
    return bundle.verify_bundle(path, SIGNER.public, expect_count)


def test_append_run_creates_then_extends_a_verifiable_bundle(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    for n in range(1, 4):
        result, predicate = demo.demo_run(n)
        assert bundle.append_run(path, result, predicate, SIGNER) == n
        report = verify(path, expect_count=n)
        assert report.ok, report.problems
    assert [r.line for r in report.records] == [1, 2, 3]
    assert not bundle.unsealed_path(path).exists()


def test_append_refuses_a_bundle_that_does_not_verify_and_leaves_it_alone(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 3)
    lines = lines_of(path.read_bytes())
    del lines[1]
    damaged = b"".join(lines)
    path.write_bytes(damaged)
    with pytest.raises(BadInput, match="bundle line 2: .*refusing to append"):
        bundle.append_run(path, *demo.demo_run(9), SIGNER)
    assert path.read_bytes() == damaged  # never re-sealed over the damage


def test_append_refuses_a_bundle_started_under_another_key(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, FOREIGN, 1)
    with pytest.raises(BadInput, match="not the given key.*Use the key that started it"):
        bundle.append_run(path, *demo.demo_run(0), SIGNER)


def test_append_refuses_a_bundle_with_a_line_resigned_by_another_key(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 2)
    lines = lines_of(path.read_bytes())
    lines[0] = resign_line(lines[0], FOREIGN)
    path.write_bytes(b"".join(lines))
    with pytest.raises(BadInput, match="bundle line 1"):
        bundle.append_run(path, *demo.demo_run(0), SIGNER)


def test_append_refuses_to_sign_a_reveal_that_does_not_match(tmp_path):
    result, predicate = demo.demo_run(0)
    predicate["freshSetReveal"]["salt"] = "00" * 32
    with pytest.raises(BadInput, match="does not match its commitment; refusing to sign"):
        bundle.append_run(tmp_path / "b.intoto.jsonl", result, predicate, SIGNER)
    assert not (tmp_path / "b.intoto.jsonl").exists()


def test_append_refuses_a_result_that_is_not_the_one_the_predicate_names(tmp_path):
    result, predicate = demo.demo_run(0)
    result["landed"] += 1
    with pytest.raises(BadInput, match="result digest"):
        bundle.append_run(tmp_path / "b.intoto.jsonl", result, predicate, SIGNER)


def test_make_predicate_refuses_bad_input():
    result, good = demo.demo_run(0)
    base = dict(result_doc=result, controller_files={"c.py": "0" * 64}, course="hard",
                provider="process", tier="process", evidence={}, cpu_budget={},
                started="2026-01-31T12:00:00Z", finished="2026-01-31T12:00:01Z")
    assert record.make_predicate(**base)["inputs"]["freshSet"] is None
    for change, message in [
        ({"tier": "bare-metal"}, "not one of"),
        ({"controller_files": {"c.py": "xyz"}}, "not a SHA-256"),
        ({"finished": "2026-01-31T11:00:00Z"}, "before"),
        ({"started": "yesterday"}, "not a UTC time"),
        ({"fresh_commitment": "0" * 64}, "committed but not revealed"),
        ({"fresh_reveal": good["freshSetReveal"]}, "without a commitment"),
        ({"result_doc": {"x": float("nan")}}, "canonical JSON"),
    ]:
        with pytest.raises(BadInput, match=message):
            record.make_predicate(**{**base, **change})


def test_a_failed_rename_leaves_the_previous_bundle_and_a_named_unsealed_file(tmp_path, monkeypatch):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 2)
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("injected crash between write and rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="injected"):
        bundle.append_run(path, *demo.demo_run(5), SIGNER)
    monkeypatch.undo()
    assert path.read_bytes() == before and verify(path, expect_count=2).ok
    assert bundle.unsealed_path(path).name == "runs.intoto.jsonl.unsealed"
    assert bundle.unsealed_path(path).exists()
    assert bundle.append_run(path, *demo.demo_run(6), SIGNER) == 3  # the next append recovers
    assert verify(path, expect_count=3).ok
    assert not bundle.unsealed_path(path).exists()


def _write_key(tmp_path):
    keys.write_keypair(tmp_path / "ci")
    return tmp_path / "ci.key", keys.load_public_key(tmp_path / "ci.pub")


def _python(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args, TESTS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_process_killed_between_write_and_rename_leaves_a_verifiable_bundle(tmp_path):
    key, public = _write_key(tmp_path)
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, keys.load_signer(key_file=key), 2)
    before = path.read_bytes()
    script = """
        import os, sys
        sys.path.insert(0, sys.argv[3])
        from kit import attest_demo as demo
        from plimsoll_ci.attest import bundle, keys
        signer = keys.load_signer(key_file=sys.argv[1])
        os.replace = lambda src, dst: os._exit(99)  # die right at the rename, no cleanup at all
        bundle.append_run(sys.argv[2], *demo.demo_run(7), signer)
    """
    proc = _python(script, str(key), str(path))
    proc.communicate(timeout=60)
    assert proc.returncode == 99
    assert path.read_bytes() == before
    assert bundle.verify_bundle(path, public, expect_count=2).ok
    unsealed = bundle.unsealed_path(path)
    assert unsealed.exists()  # the write that never landed, clearly named
    assert bundle.verify_bundle(unsealed, public, expect_count=3).ok
    assert bundle.append_run(path, *demo.demo_run(8), keys.load_signer(key_file=key)) == 3


def test_a_process_killed_at_any_moment_while_appending_leaves_a_verifiable_bundle(tmp_path):
    key, public = _write_key(tmp_path)
    path = tmp_path / "runs.intoto.jsonl"
    script = """
        import sys
        sys.path.insert(0, sys.argv[3])
        from kit import attest_demo as demo
        from plimsoll_ci.attest import bundle, keys
        signer = keys.load_signer(key_file=sys.argv[1])
        for i in range(10_000):
            bundle.append_run(sys.argv[2], *demo.demo_run(i), signer)
    """
    def inode():
        try:
            return path.stat().st_ino
        except FileNotFoundError:
            return None

    for delay in (0.0, 0.013, 0.05, 0.2):
        before = inode()
        proc = _python(script, str(key), str(path))
        deadline = time.monotonic() + 30
        while inode() == before and time.monotonic() < deadline:  # this run has appended
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        report = bundle.verify_bundle(path, public)
        assert report.ok, report.problems
        assert report.count >= 1


def test_concurrent_appenders_never_lose_or_interleave_records(tmp_path):
    key, public = _write_key(tmp_path)
    path = tmp_path / "runs.intoto.jsonl"
    script = """
        import sys
        sys.path.insert(0, sys.argv[3])
        from kit import attest_demo as demo
        from plimsoll_ci.attest import bundle, keys
        signer = keys.load_signer(key_file=sys.argv[1])
        for i in range(8):
            bundle.append_run(sys.argv[2], *demo.demo_run(i), signer)
    """
    procs = [_python(script, str(key), str(path)) for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    report = bundle.verify_bundle(path, public, expect_count=24)
    assert report.ok, report.problems


def test_append_never_writes_through_a_symlink_at_the_unsealed_name(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 1)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    bundle.unsealed_path(path).symlink_to(victim)
    assert bundle.append_run(path, *demo.demo_run(1), SIGNER) == 2
    assert victim.read_bytes() == b"keep me"
    assert verify(path, expect_count=2).ok


def test_append_keeps_the_bundle_file_mode(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, SIGNER, 1)
    os.chmod(path, 0o600)
    bundle.append_run(path, *demo.demo_run(1), SIGNER)
    assert os.stat(path).st_mode & 0o777 == 0o600
