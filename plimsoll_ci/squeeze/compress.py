"""`squeeze recipe`: a model squeezes a loop's record into a recipe of at most N tokens.

    done = compress(CompressOptions(record=Path("loop-record"), out=Path("recipe-out")), model)

The record is a folder of text (the loop's transcripts, its controller versions, its scores);
every text file in it is sent, in path order, under its name. The compressor's requests may carry
the record (it is the loop's own work), so they are recorded (`OUT/requests/`) but not tripwired;
the recipe is what crosses the wall to the rebuilds, and it is scanned like any other text that
does: against the practice seeds, the generator (constant and source) and any `--sealed` set. A
draft over the budget is sent back with its count (`cl100k_base`) until one fits or the drafts
run out. The accepted recipe is written as `OUT/recipe.txt` (what a job's `recipe:` names) and
`OUT/recipe.json` (its count, the tokenizer, every draft's count, the model and the digests of
the transcript and the recording).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze import recipes, wall

RECIPE_FORMAT = "plimsoll-recipe/1"
MAX_RECORD_BYTES = 1024 * 1024
MAX_RECORD_FILES = 500
SYSTEM = """\
An agent loop worked for hours on a drone-flying task and left the record below: its transcripts,
the versions of its controller, and its scores. Squeeze what it learned into a recipe of at most
{budget} tokens that lets a fresh builder, who sees only the task and your recipe, build a
controller as good as the loop's on flights it has never seen. Write general lessons (how to
control, which gains, which pitfalls), not facts about particular flights: the builder will be
judged on new flights. Answer with the recipe alone, no preamble."""


class CompressOptions(NamedTuple):
    """What to squeeze, into what, against which sealed values."""

    record: Path
    out: Path
    tokens: int = 32
    drafts: int = 4
    practice: tuple[int, ...] | None = None  # default: the simulator's 16
    sealed: tuple[Any, ...] = ()  # further sealed / withheld sets the recipe must not carry


class Compressed(NamedTuple):
    """How it went: the recipe (None when none was accepted) and why."""

    recipe: str | None
    tokens: list[int]  # each draft's count
    message: str


def read_record(folder: Path) -> str:
    """The record's text files as one message, under their names; BadInput when unusable."""
    if not folder.is_dir():
        raise BadInput(f"--record {folder}: no such folder; give the loop's record (a folder of "
                       "transcripts, controller versions and scores)")
    parts, total, skipped = [], 0, []
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if len(files) > MAX_RECORD_FILES:
        raise BadInput(f"--record {folder}: {len(files)} files, more than {MAX_RECORD_FILES}")
    for p in files:
        rel = p.relative_to(folder).as_posix()
        try:
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(rel)
            continue
        total += len(text)
        if total > MAX_RECORD_BYTES:
            raise BadInput(f"--record {folder}: more than {MAX_RECORD_BYTES} bytes of text; "
                           "keep the transcripts' gist, the controller versions and the scores")
        parts.append(f"=== {rel} ===\n{text.rstrip()}\n")
    if not parts:
        raise BadInput(f"--record {folder}: no text file in it")
    if skipped:
        parts.append(f"(not text, not sent: {', '.join(skipped[:20])})\n")
    return "\n".join(parts)


def compress(options: CompressOptions, model: Any) -> Compressed:
    """Ask for a recipe, send back drafts over budget, scan the accepted one, write it."""
    import plimsoll_sim as sim
    from plimsoll_ci.model import ModelClient
    from plimsoll_ci.squeeze.run import claim_out

    record = read_record(options.record)
    practice = tuple(sim.PRACTICE_SEEDS) if options.practice is None else options.practice
    secrets = wall.seal(practice, None, withheld=options.sealed)
    out = Path(options.out)
    claim_out(out)
    counts: list[int] = []
    recipe = None
    with wall.Recording(model.config.base_url, out / "requests") as recording:
        # errors and the transcript name --base-url, not the recording proxy in between
        session = ModelClient(model.config, environ=model.environ, via=recording.url).session(
            system=SYSTEM.format(budget=options.tokens))
        session.user(record)
        while len(counts) < options.drafts:
            reply = session.ask()
            if reply is None:
                return Compressed(None, counts, f"stopped ({session.stopped}) after "
                                  f"{len(counts)} draft(s); no recipe written")
            draft = (reply.content or "").strip()
            counts.append(recipes.count(draft) if draft else 0)
            if draft and counts[-1] <= options.tokens:
                recipe = draft
                break
            session.user(f"That draft is {counts[-1]} tokens ({recipes.ENCODING}); the limit is "
                         f"{options.tokens}. Squeeze it further and answer with the recipe alone."
                         if draft else "That answer was empty; answer with the recipe alone.")
        transcript = session.transcript()
    if recipe is None:
        return Compressed(None, counts, f"no draft within {options.tokens} tokens after "
                          f"{len(counts)} drafts ({', '.join(map(str, counts))} tokens); no "
                          "recipe written")
    carried = wall.scan_text(recipe, secrets.sealed)
    if carried:
        return Compressed(None, counts, f"tripwire: the recipe carries sealed entr"
                          f"{'ies' if len(carried) > 1 else 'y'} {', '.join(carried)}; it would "
                          "cross the wall to the rebuilds, so it is not written")
    from plimsoll_ci.attest.canonical import dumps

    requests, recording_sha = wall.manifest(out / "requests")
    (out / "recipe.txt").write_text(recipe + "\n", encoding="utf-8")
    (out / "recipe.json").write_text(json.dumps({
        "format": RECIPE_FORMAT, "recipe": recipe, "tokens": counts[-1],
        "encoding": recipes.ENCODING, "budget": options.tokens, "drafts": counts,
        "model": model.config.model, "base_url": model.config.base_url,
        "transcript_sha256": hashlib.sha256(dumps(transcript)).hexdigest(),
        "recording": {"requests": requests, "sha256": recording_sha},
    }, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Compressed(recipe, counts, f"recipe of {counts[-1]} tokens ({recipes.ENCODING}) "
                      f"after {len(counts)} draft(s) ({', '.join(map(str, counts))} tokens): "
                      f"{out / 'recipe.txt'}")
