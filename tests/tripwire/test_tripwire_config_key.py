"""The tripwire takes a keyed set's key from plimsoll.yaml when no key flag is given, as every
command that reads a set does; without one, the error names the config it read."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kit.cli import run_process

SEED = "3107713414"
KEY = "tripwire-test-key-not-a-secret"


def _setup(tmp_path: Path, key_line: str) -> Path:
    from plimsoll_ci import withheld

    root = tmp_path / "harness"
    (root / "requests").mkdir(parents=True)
    (root / "requests" / "1.json").write_text(f'{{"messages": ["try seed {SEED}"]}}\n')
    doc, _ = withheld.build_set(values=[("seeds.txt:2", SEED)], key=KEY.encode())
    (root / "sealed.json").write_text(withheld.dumps(doc))
    (root / "plimsoll.yaml").write_text(f"withheld: sealed.json\n{key_line}ship:\n"
                                        "  task:\n    include: ['requests/**']\n")
    return root


def _tripwire(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRIPWIRE_TEST_KEY": KEY}
    return run_process("tripwire", "--sealed", "sealed.json", "--requests", "requests", cwd=root,
                       env=env, inherit=False)


def test_the_tripwire_takes_the_key_of_plimsoll_yaml(tmp_path: Path) -> None:
    proc = _tripwire(_setup(tmp_path, "key: {env: TRIPWIRE_TEST_KEY}\n"))
    assert proc.returncode == 1, proc.stderr
    assert "seeds.txt:2" in proc.stdout and SEED not in proc.stdout + proc.stderr


def test_the_tripwire_without_a_key_names_the_config_it_read(tmp_path: Path) -> None:
    root = _setup(tmp_path, "")
    proc = _tripwire(root)
    assert proc.returncode == 2
    assert f"{(root / 'plimsoll.yaml').resolve()} (read) names no key" in proc.stderr
