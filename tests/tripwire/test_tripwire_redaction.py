"""No report prints a sealed value, wherever it sits in something printed, and every report still
says what kind of place held it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plimsoll_ci.cli import main
from plimsoll_ci.withheld import build_set, dumps

FORMATS = ("text", "json", "sarif", "markdown")
VALUES = [("runs.txt:1", "4829163057"), ("phrases.txt:1", "quor vantile"),
          ("labels.txt:1", "quorvantile")]


def _report(tmp_path: Path, requests: Path, fmt: str, capsys) -> str:
    doc, _ = build_set(values=VALUES, tag="plimsoll-sealed/1")
    (tmp_path / "sealed.json").write_text(dumps(doc))
    code = main(["tripwire", "--sealed", str(tmp_path / "sealed.json"), "--requests",
                 str(requests), "--format", fmt])
    out = capsys.readouterr()
    assert code == 1, out.err
    return out.out + out.err


def _never_printed(out: str) -> None:
    low = out.lower()
    for _id, value in VALUES:
        assert value not in low, value
    assert "4829163057" not in low.replace("~1", "/")


KEYS = {  # a JSON key with `/` or `~` (escaped as ~1 and ~0 in a pointer), the value anywhere
    "runs/4829163057/log": "/metadata/runs~1[withheld]~1log (key)",
    "4829163057/log": "/metadata/[withheld]~1log (key)",
    "runs/4829163057": "/metadata/runs~1[withheld] (key)",
    "a/quor vantile": "/metadata/a~1[withheld] (key)",
    # `~0` then the value reads as the number 04829163057: withheld with its leading zero
    "x~4829163057": "/metadata/x~[withheld] (key)",
    "~/quorvantile~": "/metadata/~0~1[withheld]~0 (key)",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_in_a_json_key_with_slashes_or_tildes_is_never_printed(tmp_path, capsys,
                                                                      fmt) -> None:
    requests = tmp_path / "r"
    requests.mkdir()
    (requests / "body.json").write_text(json.dumps({"metadata": {k: 1 for k in KEYS}}))
    out = _report(tmp_path, requests, fmt, capsys)
    _never_printed(out)
    if fmt == "json":
        chains = {f["chain"] for f in json.loads(out[:out.rindex("}") + 1])["findings"]}
        assert chains == set(KEYS.values())


def _record(folder: Path, body: bytes, ctype: str, headers: list) -> None:
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "000001.request.body").write_bytes(body)
    (folder / "000001.request.json").write_text(json.dumps({
        "format": "plimsoll-record/1", "seq": 1, "method": "POST", "target": "/v1/files",
        "headers": [["Content-Type", ctype], *headers], "body": "000001.request.body",
        "body_bytes": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_name_holding_a_value_says_which_kind_of_place_it_was(tmp_path, capsys, fmt) -> None:
    r = tmp_path / "r"
    b = "bb"
    multipart = (f"--{b}\r\nContent-Disposition: form-data; name=\"quorvantile\"\r\n\r\nx\r\n"
                 f"--{b}--\r\n").encode()
    _record(r / "a", multipart, f"multipart/form-data; boundary={b}",
            [["X-Run-4829163057", "1"]])
    _record(r / "b", b"quorvantile=1&lap=2", "application/x-www-form-urlencoded", [])
    out = _report(tmp_path, r, fmt, capsys)
    _never_printed(out)
    # the value is withheld where it sits in the name (as in a shipped name), the kind stays
    for place in ("header X-Run-[withheld]", "part [withheld] name", "field 0 [withheld]"):
        assert place in out, (fmt, place)
    if fmt == "text":
        assert " at [withheld]" not in out
