"""The tiny JSON contract a model answers in, and the messages it is sent.

A reply's content is one JSON object, nothing else (one fenced code block around it is tolerated):

    {"edits": [{"path": "shelf/dates.py", "content": "...the whole new file..."}],
     "commands": [["pytest", "-q", "tests/test_dates.py"]]}

Both keys are optional; no other key is allowed. A reply that is not this (prose, a tool call,
another shape) is an attempt that proposed nothing: `parse` says why, in words the report keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

MAX_EDITS = 50
MAX_COMMANDS = 20
MAX_ARGS = 200
MAX_CONTENT = 1024 * 1024
FEEDBACK_OUTPUT = 4000  # characters of a command's output tail fed back to the model
_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```\s*\Z", re.S)

SYSTEM = """\
You fix a bug in a software repository. You cannot see the files directly: you get the task, a \
listing of the repository, and the files the task points at. Answer with exactly one JSON object \
and nothing else:

{"edits": [{"path": "relative/path.py", "content": "the complete new content of the file"}],
 "commands": [["program", "arg", ...]]}

- "edits" replace whole files (or create them); paths are relative to the repository's top \
folder, inside it.
- "commands" run after the edits, each in a fresh sandbox over the repository (no network, no \
shell: give argv lists). Only these programs are allowed: {allow}. Anything else is refused.
- {turns}
- An answer with no edits and no commands ends the attempt."""


def utf8(text: str) -> bool:
    """Whether `text` is text UTF-8 can carry (JSON can smuggle in lone surrogates: "\\ud800")."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(text: str) -> str:
    """`text` with what UTF-8 cannot carry written as backslash escapes (a file name's undecodable
    bytes as `\\xNN`), so a report, a result and a signed record can always hold it."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class Edit(NamedTuple):
    """Replace (or create) one file with `content`."""

    path: str
    content: str


class Proposal(NamedTuple):
    """What one reply proposes: edits first, then commands."""

    edits: tuple[Edit, ...]
    commands: tuple[tuple[str, ...], ...]

    @property
    def empty(self) -> bool:
        return not self.edits and not self.commands


class NotContract(NamedTuple):
    """A reply that is not the contract, and why."""

    why: str


def parse(content: str | None) -> Proposal | NotContract:
    """The proposal in a reply's content, or why it is not the contract."""
    if content is None or not content.strip():
        return NotContract("the reply has no content (a tool call, or nothing)")
    fenced = _FENCE.match(content)
    text = fenced.group(1) if fenced else content
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        return NotContract(f"the reply is not one JSON object (line {err.lineno} column "
                           f"{err.colno}: {err.msg})")
    except RecursionError:
        return NotContract("the reply is JSON nested too deeply")
    if not isinstance(doc, dict):
        return NotContract(f"the reply is a JSON {type(doc).__name__}, not an object")
    extra = sorted(set(doc) - {"edits", "commands"})
    if extra:
        return NotContract(f"unknown key(s) {', '.join(map(repr, extra))}; only \"edits\" and "
                           "\"commands\"")
    edits = doc.get("edits", [])
    commands = doc.get("commands", [])
    if not isinstance(edits, list) or len(edits) > MAX_EDITS:
        return NotContract(f"\"edits\" must be a list of at most {MAX_EDITS} objects")
    if not isinstance(commands, list) or len(commands) > MAX_COMMANDS:
        return NotContract(f"\"commands\" must be a list of at most {MAX_COMMANDS} argv lists")
    out_edits = []
    for i, e in enumerate(edits):
        if not isinstance(e, dict) or set(e) != {"path", "content"} or \
                not isinstance(e["path"], str) or not isinstance(e["content"], str) or \
                not utf8(e["path"]):
            return NotContract(f"edits[{i}] must be {{\"path\": string, \"content\": string}}")
        if len(e["content"].encode("utf-8", "surrogatepass")) > MAX_CONTENT:
            return NotContract(f"edits[{i}]: content larger than {MAX_CONTENT} bytes")
        out_edits.append(Edit(e["path"], e["content"]))
    out_commands = []
    for i, c in enumerate(commands):
        if not isinstance(c, list) or not c or len(c) > MAX_ARGS or \
                not all(isinstance(a, str) and "\0" not in a and utf8(a) for a in c) or not c[0]:
            return NotContract(f"commands[{i}] must be a non-empty list of strings (an argv)")
        out_commands.append(tuple(c))
    return Proposal(tuple(out_edits), tuple(out_commands))


def system_prompt(allow: Sequence[str], turns: int) -> str:
    """The system message: the contract, the allowlist and how many rounds there are."""
    rounds = ("You answer once: there is no second round, so put the fix in this answer."
              if turns == 1 else
              f"You have up to {turns} rounds: after each answer you get the result of every "
              "edit and command, and may answer again.")
    return SYSTEM.replace("{allow}", ", ".join(allow)).replace("{turns}", rounds)


def task_prompt(task_text: str, listing: str, shown: Sequence[tuple[str, str]]) -> str:
    """The first user message: the task, the listing, and the files the task points at."""
    parts = [f"# Task\n\n{task_text.strip()}\n", f"# Files in the repository\n\n{listing}\n"]
    for path, text in shown:
        parts.append(f"# {path}\n\n```\n{text}\n```\n")
    return "\n".join(parts)


class EditOutcome(NamedTuple):
    """What became of one edit."""

    path: str
    applied: bool
    detail: str  # "wrote N bytes" or why it was refused


class CommandOutcome(NamedTuple):
    """What became of one command."""

    argv: tuple[str, ...]
    exit_code: int  # 126 refused, 124 timed out
    refused: bool
    timed_out: bool
    output: str
    seconds: float


def feedback(edits: Sequence[EditOutcome], commands: Sequence[CommandOutcome]) -> str:
    """The user message after a round: every edit's and command's outcome."""
    lines = ["# Results"]
    for e in edits:
        lines.append(f"- edit {e.path}: {e.detail}")
    for c in commands:
        tail = c.output[-FEEDBACK_OUTPUT:]
        lines.append(f"- command {json.dumps(list(c.argv))}: exit {c.exit_code}"
                     + (" (refused: not on the allowlist)" if c.refused else "")
                     + (" (killed at the timeout)" if c.timed_out else ""))
        if tail.strip():
            lines.append("```\n" + tail.rstrip("\n") + "\n```")
    if len(lines) == 1:
        lines.append("(nothing was proposed)")
    return "\n".join(lines) + "\n"
