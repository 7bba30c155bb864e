"""The hook's start-up: it loads the matching engine only when some content needs scanning, never
numpy (the engine's passes are compiled or pure Python, whatever the scan's size), the YAML
parser and pathspec only when the staged config is new to it, and the report's modules only when
there is something to report."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

from kit.harness_repo import SEED, git, hook_env, leak

HEAVY = ("numpy", "plimsoll_ci.engine.contents", "plimsoll_ci.match.extract", "pathspec", "yaml",
         "plimsoll_ci.shipscan.report")
PROBE = f"""
import json, sys
from plimsoll_ci.cli import main
rc = main(sys.argv[1:])
print(json.dumps([rc, [m for m in {HEAVY!r} if m in sys.modules]]), file=sys.stderr)
"""


def hook_loads(repo: Path, *args: str) -> tuple[int, list[str]]:
    """The hook's exit code and which heavy modules its process loaded."""
    p = subprocess.run([sys.executable, "-c", PROBE, "hook", "ship-scan", *args], cwd=repo,
                       capture_output=True, text=True, env=hook_env())
    rc, loaded = json.loads(p.stderr.strip().splitlines()[-1])
    return rc, loaded


def test_a_hook_run_with_every_content_known_clean_loads_no_engine(harness: Path) -> None:
    rc, loaded = hook_loads(harness, "viewer/app.mjs")
    assert rc == 0 and "plimsoll_ci.engine.contents" in loaded  # the first run scans
    assert "numpy" not in loaded  # a few small files: the pure-Python path
    rc, loaded = hook_loads(harness, "viewer/app.mjs")  # the cache knows every content
    assert (rc, loaded) == (0, [])


def test_a_commit_of_one_small_change_scans_it_without_numpy(harness: Path) -> None:
    assert hook_loads(harness)[0] == 0
    (harness / "viewer/app.mjs").write_text("export const speed = 3;\n")
    git(harness, "add", "viewer/app.mjs")
    rc, loaded = hook_loads(harness, "viewer/app.mjs")
    assert rc == 0 and loaded == ["plimsoll_ci.engine.contents", "plimsoll_ci.match.extract"]


def test_a_warm_hook_run_imports_neither_the_yaml_parser_nor_pathspec(harness: Path) -> None:
    rc, loaded = hook_loads(harness, "viewer/app.mjs")  # the first run parses the config
    assert rc == 0 and "yaml" in loaded and "pathspec" in loaded
    for changed in ("README.md", "viewer/app.mjs"):  # nothing shipped; every content known
        rc, loaded = hook_loads(harness, changed)
        assert rc == 0 and "yaml" not in loaded and "pathspec" not in loaded
    (harness / "plimsoll.yaml").write_text((harness / "plimsoll.yaml").read_text()
                                           .replace('"**/*.test.mjs"', '"**/*.spec.mjs"'))
    git(harness, "add", "plimsoll.yaml")  # a new staged config: parsed and translated again
    rc, loaded = hook_loads(harness, "plimsoll.yaml")
    assert rc == 0 and "yaml" in loaded and "pathspec" in loaded


def test_a_hook_run_with_a_finding_loads_the_report(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    rc, loaded = hook_loads(harness, "viewer/replay.html")
    assert rc == 1 and "plimsoll_ci.shipscan.report" in loaded


READ = """
import sys
from plimsoll_ci.cli import main
from plimsoll_ci.match import classes
if sys.argv[1] != "built":  # as installed without a C compiler
    classes.native = None
rc = main(["hook", "ship-scan"])
print(rc, "numpy" in sys.modules)
"""


def test_a_cold_run_of_many_blobs_never_loads_numpy_with_the_compiled_part_or_without(
        harness: Path) -> None:
    # (its passes were numpy's without the compiled part: a cold run started numpy's import,
    # 50-90 ms, while git read the blobs)
    from plimsoll_ci.match import classes

    many = harness / "viewer" / "many"
    many.mkdir()
    for i in range(300):  # past the compiled passes' size once joined into a batch
        (many / f"part{i:03d}.txt").write_text(f"part {i} of the viewer, a line of its words\n")
    git(harness, "add", "-A")
    for build in ["pure-python"] + (["built"] if classes.native is not None else []):
        shutil.rmtree(harness / ".git" / "plimsoll", ignore_errors=True)  # cold each time
        p = subprocess.run([sys.executable, "-c", READ, build], cwd=harness,
                           capture_output=True, text=True, env=hook_env())
        assert p.stdout.split() == ["0", "False"], (build, p.stderr)


COLD_RUN = """
import sys
from plimsoll_ci.cli import main
from plimsoll_ci.match import classes
when = sys.argv.pop(1)
if when != "built":  # as installed without a C compiler: the pure-Python passes
    classes.native = None
rc = main(sys.argv[1:])
print("numpy" in sys.modules, file=sys.stderr)
raise SystemExit(rc)
"""


def test_a_cold_run_finds_the_same_with_the_compiled_part_and_without_it(
        harness: Path) -> None:
    from plimsoll_ci.match import classes

    (harness / "plimsoll.yaml").write_text(  # globs only: every content is a blob to read
        "withheld: withheld.json\nkey: {env: PLIMSOLL_WITHHELD_KEY}\n"
        "ship:\n  viewer:\n    include: ['viewer/**', 'tasks/**']\n")
    many = harness / "viewer" / "many"
    many.mkdir()
    # ~15 KB in all: the engine's pure-Python passes, or its compiled passes from 4 KB
    for i in range(276):
        (many / f"part{i:03d}.txt").write_text(f"part {i} of the viewer, a line of its words\n")
    (many / "part007.txt").write_text(f"seed={SEED}\n")
    (many / "part100.txt").write_text(base64.b64encode(SEED.encode()).decode())
    (many / "part200.txt").write_text("%33%31%30%37%37%31%33%34%31%34\n")
    (many / f"replay-{SEED}.txt").write_text("a name\n")
    git(harness, "add", "-A")
    outputs = []
    runs = [("pure-python", False)]
    if classes.native is not None:
        runs.append(("built", False))
    for when, numpy in runs:
        shutil.rmtree(harness / ".git" / "plimsoll", ignore_errors=True)  # cold each time
        p = subprocess.run([sys.executable, "-c", COLD_RUN, when, "hook", "ship-scan"],
                           cwd=harness, capture_output=True, text=True, env=hook_env())
        assert p.returncode == 1 and p.stderr.split()[-1] == str(numpy), p.stderr
        outputs.append(p.stdout)
    assert all(out == outputs[0] for out in outputs)
    for where in ("part007.txt:1:", "part100.txt:1:", "part200.txt:1:", "many/replay-"):
        assert where in outputs[0], outputs[0]
    assert SEED not in outputs[0]
