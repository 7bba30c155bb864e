"""Code checks of JavaScript sources: the generator constant and practice seeds in JavaScript's
notations, and the fingerprints of the generator's JavaScript port however renamed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import plimsoll_sim as sim
import plimsoll_sim.generator
from plimsoll_ci.grading import checks as grading_checks
from plimsoll_ci.squeeze import checks

NOTHING = {"generator": False, "source": False, "practice_seeds": False}
GENERATOR = {**NOTHING, "generator": True}
PRACTICE = {**NOTHING, "practice_seeds": True}
SIM = Path(sim.__file__).parent


@pytest.fixture(scope="module")
def scan():
    return checks.scanner(sim.PRACTICE_SEEDS)


@pytest.mark.parametrize("source, carries", [
    ("const M = 0x5EEDD20EC0A57E4Bn;\n", GENERATOR),
    ("const M = 0x5eed_d20e_c0a5_7e4bn;\n", GENERATOR),
    ("const M = 6840354369849097803n;\n", GENERATOR),
    ("const M = 6_840_354_369_849_097_803n;\n", GENERATOR),
    ('const M = BigInt("6840354369849097803");\n', GENERATOR),
    ("const S = [5830142297n, 1n];\n", PRACTICE),
    ("const S = [5_830_142_297];\n", PRACTICE),
    ("const S = 0x15B80E959n;\n", PRACTICE),  # 5830142297 in hex
    ("const x = 0x5EEDD20EC0A57E4Cn;\n", NOTHING),
    ("const x = 58301422970n;\n", NOTHING),
])
def test_javascript_notations_of_the_constant_and_the_seeds_are_found(source, carries, scan):
    found = checks.check({"controller.mjs": source.encode()}, scan)
    assert checks.carries(found) == carries


def test_a_renamed_reformatted_javascript_port_of_the_generator_is_its_source(scan):
    text = (SIM / "generator.mjs").read_text()
    text = text.replace("mix64", "scramble").replace("Stream", "Draws").replace("  ", "    ")
    text = text.replace("0x5EEDD20EC0A57E4Bn", 'BigInt("0x5eedd20e" + "c0a57e4b")')
    found = checks.check({"lib/gen.js": text.encode()}, scan)
    assert found["source"] and found["source"][0].startswith("lib/gen.js (overlap ")
    assert not found["generator"]  # the constant is split, the source is still recognised


def test_the_javascript_cheater_is_named_by_the_grading_code_checks():
    files = {"cheater.mjs": (SIM / "controllers" / "cheater.mjs").read_bytes()}
    suspicious = grading_checks.suspicious_set(sim.PRACTICE_SEEDS, SIM, sim.generator.MAGIC)
    kinds = {c.check for c in grading_checks.scan(files, [], suspicious).suspicious}
    assert kinds == {"practice_seed", "generator_constant", "simulator_source"}
    honest = {"honest.mjs": (SIM / "controllers" / "honest.mjs").read_bytes()}
    assert not grading_checks.scan(honest, [], suspicious).suspicious


def test_the_javascript_port_draws_the_flights_the_python_generator_draws(tmp_path):
    seeds = [*sim.PRACTICE_SEEDS[:4], 0, 1, 2**64 - 1, 4111111111]
    course = sim.course("hard")
    script = tmp_path / "draw.mjs"
    script.write_text(
        f'import {{ flight }} from "{(SIM / "generator.mjs").as_uri()}";\n'
        f"const hidden = {json.dumps(course.hidden._asdict())};\n"
        f"const out = {json.dumps([str(s) for s in seeds])}.map((s) => flight(BigInt(s), hidden));\n"
        'console.log(JSON.stringify(out, (k, v) => typeof v === "bigint" ? v.toString() : v));\n')
    drawn = json.loads(subprocess.run(["node", str(script)], capture_output=True, text=True,
                                      check=True, timeout=60).stdout)
    for seed, js in zip(seeds, drawn, strict=True):
        py = sim.generator.flight(seed, course)
        assert (int(js["seed"]), js["payload"], js["weakMotor"], js["weakFactor"]) == \
            (py.seed, py.payload, py.weak_motor, py.weak_factor)
        assert tuple(js["wind"]) == py.wind and tuple(js["jitter"]) == py.jitter
        assert int(js["noiseKey"]) == py.noise_key
        assert [(g["start"], g["duration"], tuple(g["direction"]), g["peak"], g["sharp"])
                for g in js["gusts"]] == [tuple(g) for g in py.gusts]
