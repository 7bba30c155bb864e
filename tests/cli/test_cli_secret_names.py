"""A key given where a flag wants a variable's NAME (`--key-env`, `--signing-key-env`,
`--api-key-env`, ...) or a key file's path is never printed back: every such flag, through the
real CLI in-process."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from plimsoll_ci import cli
from plimsoll_ci.cli import main

# what a user pastes by mistake: a base64 key (not a variable name at all), and a hex key (a valid
# variable name that is no variable)
B64_KEY = "FiP7mXMv3kq9Zr1+YbWcT0aLe4s8HdUgNjQx2oVp5yI="
HEX_KEY = "a3f9c2d1e4b5a6978877665544332211aabbccddeeff00112233445566778899"

# every command and flag that names where a secret is, with the arguments the command requires
ENV_FLAGS = [
    (["scan"], "--key-env", ["."]),
    (["withheld", "build"], "--key-env", []),
    (["withheld", "info"], "--key-env", ["w.json"]),
    (["sealed", "build"], "--key-env", []),
    (["sealed", "info"], "--key-env", ["s.json"]),
    (["history"], "--key-env", ["--set", "w.json"]),
    (["tripwire"], "--key-env", ["--sealed", "s.json", "--requests", "r"]),
    (["grade"], "--withheld-key-env", ["--controller", "c.py", "--course", "easy", "--seeds", "1"]),
    (["grade"], "--signing-key-env", ["--controller", "c.py", "--course", "easy", "--seeds", "1"]),
    (["grade"], "--key-env", ["--controller", "c.py", "--course", "easy", "--seeds", "1"]),
    (["squeeze", "run"], "--withheld-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "run"], "--signing-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "run"], "--api-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "plan"], "--withheld-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "plan"], "--signing-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "plan"], "--api-key-env", ["j.yaml", "--out", "o"]),
    (["squeeze", "recipe"], "--sealed-key-env", ["--record", "r", "--out", "o"]),
    (["squeeze", "recipe"], "--api-key-env", ["--record", "r", "--out", "o"]),
    (["squeeze", "canary"], "--api-key-env", ["j.yaml"]),
    (["bundle", "merge"], "--signing-key-env", ["s1", "--out", "o"]),
    (["eval", "run"], "--withheld-key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
    (["eval", "run"], "--sealed-key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
    (["eval", "run"], "--api-key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
    (["eval", "run"], "--signing-key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
    (["eval", "run"], "--key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
    (["eval", "run"], "--model-key-env", ["--repo", ".", "--tasks", "t", "--out", "o"]),
]


def _env_flags() -> set[tuple[tuple[str, ...], str]]:
    """Every option of every command that ends in `-env` (or stores into a `*_env` field)."""
    found = set()

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, path + (name,))
            elif a.dest.endswith("_env") or any(o.endswith("-env") for o in a.option_strings):
                found.update((path, o) for o in a.option_strings)

    for name, (module, _) in cli.COMMANDS.items():
        if importlib.util.find_spec(module) is not None:
            walk(cli.build_parser([name]), ())
    return found


def test_the_table_names_every_flag_that_says_where_a_secret_is():
    assert _env_flags() == {(tuple(c), f) for c, f, _ in ENV_FLAGS}


@pytest.mark.parametrize("command, flag, rest", ENV_FLAGS,
                         ids=[f"{' '.join(c)} {f}" for c, f, _ in ENV_FLAGS])
def test_a_key_given_as_a_variable_name_is_refused_without_being_repeated(
        command, flag, rest, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main([*command, flag, B64_KEY, *rest])
    out, err = capsys.readouterr()
    assert code == 2
    assert B64_KEY not in out + err and B64_KEY[:8] not in out + err
    assert "takes the NAME of an environment variable" in err and "not repeated" in err
    assert list(tmp_path.iterdir()) == []  # refused before anything was done


# the flows that reach the library with a valid name that is no variable (a hex key)
UNSET = [
    (["scan", "--key-env", HEX_KEY, "--set", "w.json", "."], "--key-env"),
    (["withheld", "build", "--values", "seeds.txt", "-o", "w.json", "--key-env", HEX_KEY],
     "--key-env"),
    (["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1",
      "--withheld", "w.json", "--withheld-key-env", HEX_KEY], "--withheld-key-env"),
    (["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1", "--bundle", "b.jsonl",
      "--signing-key-env", HEX_KEY], "--signing-key-env"),
    (["squeeze", "recipe", "--record", "r", "--out", "o", "--base-url",
      "http://127.0.0.1:9/v1", "--model", "m", "--max-tokens", "100", "--api-key-env", HEX_KEY],
     "environment variable"),
]


@pytest.mark.parametrize("argv, says", UNSET, ids=[f"{a[0]} {s}" for a, s in UNSET])
def test_a_key_that_reads_as_a_name_is_not_repeated_when_no_such_variable_is_set(
        argv, says, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(HEX_KEY, raising=False)
    (tmp_path / "seeds.txt").write_text("3107713414\n")
    (tmp_path / "c.py").write_text("")
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert HEX_KEY not in out + err and HEX_KEY[:12] not in out + err
    assert says in err and "not set or empty" in err


def test_an_unset_variable_with_a_name_is_named_with_its_flag(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLIMSOLL_TEST_UNSET_KEY", raising=False)
    code = main(["scan", "--key-env", "PLIMSOLL_TEST_UNSET_KEY", "--set", "w.json", "."])
    err = capsys.readouterr().err
    assert code == 2
    assert "--key-env PLIMSOLL_TEST_UNSET_KEY: the environment variable is not set or empty" in err


FILE_FLAGS = [
    ["scan", "--key-file", B64_KEY, "--set", "w.json", "."],
    ["withheld", "build", "--values", "seeds.txt", "-o", "w.json", "--key-file", B64_KEY],
    ["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1", "--withheld",
     "w.json", "--withheld-key-file", B64_KEY],
    ["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1", "--bundle", "b.jsonl",
     "--signing-key-file", B64_KEY],
    ["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1", "--bundle", "b.jsonl",
     "--key", B64_KEY],
]


@pytest.mark.parametrize("argv", FILE_FLAGS, ids=[" ".join(a[:2]) + " " + a[-2]
                                                  for a in FILE_FLAGS])
def test_a_key_given_as_a_key_file_path_is_not_repeated(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seeds.txt").write_text("3107713414\n")
    (tmp_path / "c.py").write_text("")
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert B64_KEY not in out + err and B64_KEY[:8] not in out + err
    assert "no such file (the path given is not repeated" in err


def test_a_stray_argument_is_counted_not_repeated(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["grade", "--controller", "c.py", "--course", "easy", "--seeds", "1", B64_KEY])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert B64_KEY not in err and "1 argument the command does not take" in err
