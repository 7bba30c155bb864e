"""The JavaScript runner's codec and the staging of JavaScript controllers (no sandbox needed)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import stage as stage_mod
from plimsoll_ci.sandbox.runner import pack, unpack

RUNNER_MJS = Path(stage_mod.__file__).with_name("runner.mjs")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def node_eval(tmp_path: Path, body: str) -> str:
    """Run an ES module that imports runner.mjs's codec (without running its main loop)."""
    codec = tmp_path / "codec.mjs"
    text = RUNNER_MJS.read_text()
    codec.write_text(text[:text.index("// -- lines")])
    script = tmp_path / "t.mjs"
    script.write_text(f'import {{ pack, unpack }} from "{codec.as_uri()}";\n{body}\n')
    return subprocess.run(["node", str(script)], capture_output=True, text=True, check=True,
                          timeout=60).stdout


@needs_node
def test_runner_mjs_packs_commands_byte_for_byte_as_runner_py_does(tmp_path):
    rows = [{"thrust": 6.1, "roll": -0.25, "pitch": 1e-300, "yaw_rate": math.pi},
            {"thrust": 0.5, "roll": 0.0, "pitch": -0.0, "yaw_rate": 2.0 ** -1074}]
    got = node_eval(tmp_path, f"console.log(JSON.stringify(pack({json.dumps(rows)})));")
    assert json.loads(got) == pack(rows)
    mixed = [{"thrust": 1.5}, None, {"thrust": "high"}]
    got = node_eval(tmp_path, f"console.log(JSON.stringify(pack({json.dumps(mixed)})));")
    assert json.loads(got) == pack(mixed) == {"json": mixed}


@needs_node
def test_runner_mjs_unpacks_the_hosts_observations_exactly(tmp_path):
    obs = [{"t": 0.01 * k, "pos": [1.0 / 3, 2.0, 1e-9], "gate": k % 4} for k in range(5)]
    packed = pack(obs)
    got = node_eval(tmp_path, f"console.log(JSON.stringify(unpack({json.dumps(packed)})));")
    assert json.loads(got) == unpack(packed)


def test_a_folder_whose_entry_is_controller_mjs_is_staged_for_node(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "controller.mjs").write_text("export default class {}\n")
    (tmp_path / "c" / "helper.mjs").write_text("export const x = 1;\n")
    st = stage_mod.stage(str(tmp_path / "c"))
    try:
        assert (st.runtime, st.module) == ("node", "controller.mjs")
        assert sorted(st.files) == ["controller.mjs", "helper.mjs"]
        assert (st.runner / "runner.mjs").read_bytes() == RUNNER_MJS.read_bytes()
    finally:
        stage_mod.cleanup(st)
    (tmp_path / "c" / "controller.py").write_text("class Controller: ...\n")
    st = stage_mod.stage(str(tmp_path / "c"))  # a folder with both is a Python controller
    try:
        assert (st.runtime, st.module) == ("python", "controller")
    finally:
        stage_mod.cleanup(st)


def test_a_controller_in_another_language_is_refused_naming_what_is_taken(tmp_path):
    ts = tmp_path / "controller.ts"
    ts.write_text("export default class {}\n")
    with pytest.raises(BadInput, match=r"controller .*controller\.ts: expected a \.py, \.mjs or "
                                       r"\.js file"):
        stage_mod.stage(str(ts))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match=r"no controller\.py, controller\.mjs or controller\.js"):
        stage_mod.stage(str(tmp_path / "empty"))
