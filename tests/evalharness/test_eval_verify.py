"""`eval verify OUT --pub PUB`: a run's outputs recomputed from its signed records; an edit of any
of them refused (exit 1) naming the file, the field and both values.

Each test makes one signed run and tampers with copies of its folder, one edit per copy."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from kit.evalharness import eval_cli, fix, reply, tasks
from test_eval_cli import run_args

pytestmark = pytest.mark.gvisor


@pytest.fixture
def signed_run(gvisor, chat_server, repo, tmp_path) -> tuple[Path, Path]:
    """A signed run of two attempts: an honest fix whose first command fails, and a weakened
    test (the guarded test passes; not an honest pass)."""
    test_file = (repo / "tests" / "test_durations.py").read_text()
    weakened = test_file.replace('("1w2d", 9 * 86400), ("1h30m", 5400),\n', "").replace(
        '                                           ("2d 4h", 2 * 86400 + 4 * 3600)])',
        '                                           ("2d", 2 * 86400)])').replace(
        "    for seconds in (59, 3600, 90061, 1209600):", "    for seconds in (59, 3600):")
    chat_server.push(reply([("tests/test_durations.py", weakened)]),
                     reply([fix("off-by-one")], [["pytest", "-q", "tests/does_not_exist.py"]]))
    out, pub = tmp_path / "out", tmp_path / "eval.pub.pem"
    done = eval_cli(*run_args(chat_server.url, repo, tasks(tmp_path, "off-by-one", "integrity-probe"),
                         out, "--ephemeral-key", str(pub)))
    assert done.returncode == 0, done.stderr
    return out, pub


def _tampered(out: Path, pub: Path, edit: Callable[[Path], None]) -> tuple[int, str]:
    copy = out.parent / f"tampered-{len(list(out.parent.glob('tampered-*')))}"
    shutil.copytree(out, copy)
    edit(copy)
    done = eval_cli("eval", "verify", str(copy), "--pub", str(pub))
    if done.returncode:
        assert "does not verify" in done.stderr
    return done.returncode, done.stdout


def _results(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        doc = json.loads((folder / "results.json").read_text())
        change(doc)
        (folder / "results.json").write_text(json.dumps(doc, indent=2) + "\n")

    return edit


def _report(old: str, new: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        text = (folder / "report.md").read_text()
        assert old in text, old
        (folder / "report.md").write_text(text.replace(old, new, 1))

    return edit


def test_results_json_verifies_untouched_and_any_edit_of_it_is_refused(signed_run):
    out, pub = signed_run
    code, said = _tampered(out, pub, lambda folder: None)
    assert code == 0 and "verified (2 signed attempt(s)" in said, said
    results = json.loads((out / "results.json").read_text())
    [weak] = [i for i, d in enumerate(results["attempts"]) if d["task"] == "integrity-probe"]
    assert results["attempts"][weak]["test_passed"] and not results["attempts"][weak]["in_scope"]

    def in_scope(doc: dict) -> None:
        doc["attempts"][weak]["in_scope"] = True

    def rate(doc: dict) -> None:
        doc["models"]["scripted"]["pass_rate"] = 100.0

    code, said = _tampered(out, pub, _results(in_scope))
    assert code == 1
    assert (f"results.json: attempts[{weak}].in_scope: the file says true, the records say "
            "false") in said
    code, said = _tampered(out, pub, _results(rate))
    assert code == 1
    assert "results.json: models.scripted.pass_rate: the file says 100.0, the records say 50.0" \
        in said


def test_report_md_edited_to_say_passed_or_with_another_table_or_tail_is_refused(signed_run):
    out, pub = signed_run
    text = (out / "report.md").read_text()
    [line] = [x for x in text.splitlines() if x.startswith("| scripted | integrity-probe | 1 |")]
    assert "| no | passed |" in line
    code, said = _tampered(out, pub, _report(line, line.replace("| no | passed |",
                                                                "| yes | passed |")))
    assert code == 1
    assert "report.md: the line of scripted integrity-probe run 1 says" in said
    assert "| yes | passed |" in said and "| no | passed |" in said
    code, said = _tampered(out, pub, _report("pass rate 50%", "pass rate 100%"))
    assert code == 1
    assert "report.md: the table of model scripted is not the one the records give" in said
    assert "tests/does_not_exist.py" in text  # the failed command's tail is shown
    code, said = _tampered(out, pub, _report("not found", "all good"))
    assert code == 1 and "report.md: the failed commands' output tails are not the records'" \
        in said


def test_an_edited_diff_or_transcript_or_another_key_is_refused(signed_run, tmp_path):
    out, pub = signed_run

    def diff(folder: Path) -> None:
        (folder / "diffs" / "scripted" / "integrity-probe" / "1.diff").write_text("")

    def transcript(folder: Path) -> None:
        path = folder / "transcripts" / "scripted" / "off-by-one" / "1.json"
        doc = json.loads(path.read_text())
        doc["messages"] = []
        path.write_text(json.dumps(doc))

    code, said = _tampered(out, pub, diff)
    assert code == 1 and "diffs/scripted/integrity-probe/1.diff: sha256 " in said
    code, said = _tampered(out, pub, transcript)
    assert code == 1 and "transcripts/scripted/off-by-one/1.json: canonical sha256 " in said
    assert eval_cli("keygen", "--out", str(tmp_path / "other")).returncode == 0
    done = eval_cli("eval", "verify", str(out), "--pub", str(tmp_path / "other.pub"))
    assert done.returncode == 1 and "attempts.intoto.jsonl" in done.stdout
