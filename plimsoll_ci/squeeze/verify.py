"""`squeeze verify DIR --pub KEY`: recompute a squeeze from its signed records, trust nothing else.

Checks, every problem at once, each naming the file and what disagrees:

- `bundle.intoto.jsonl` (or `bundle.intoto.jsonl.gz`): signatures, chain and checkpoint under the
  given key, each reveal against its commitment (a held-out set's commitment dated before every
  grading started), and the squeeze's own checks on the records (`records.read`): one job, the
  committed practice and unseen sets flown by every grading, the graded files are the checked
  files, every grading of the plan there once;
- `harness.pub`: the key given with `--pub`;
- `fresh.json` (or `held-out.json`), `result.json`, `evidence.json`, `report.md`, `report.html`:
  exactly the bytes the records give (`artifacts.derive`); a JSON file that differs is named down
  to the field;
- a merged folder (`bundle merge`): every shard's original bundle under a key given with
  `--shard-pub` (without one, under the key kept beside it: consistency only, and a note says
  so), and the merged records exactly theirs (`merge.check_provenance`);
- `run.json` (the unsigned account): what it states that the records also state (status, job,
  commitment, number of signed gradings) agrees. Its times and load are not signed.

Starts no sandbox and imports no grader: it reads files and checks signatures. Every read is
bounded (the bundle: `attest.bundle.MAX_BUNDLE_BYTES`, any other file: `MAX_FILE`) and never
follows a link inside the folder; a device or FIFO is never read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest.keys import PublicKey
from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze import artifacts, fresh_sets
from plimsoll_ci.squeeze.job import MAX_SETS
from plimsoll_ci.squeeze.plan import unseen_section

MAX_FILE = 256 << 20  # result.json, evidence.json, the reports, run.json
_SHOW = 60


class Verified(NamedTuple):
    """What `verify` found: problems (empty when it verified) and, when it did, the result."""

    problems: list[str]
    result: dict[str, Any] | None
    records: int
    sessions: int = 0  # of the records, rebuild sessions (the others are gradings)
    notes: tuple[str, ...] = ()  # what a reader should know of a verified run (sealed set, shards)

    @property
    def ok(self) -> bool:
        """True when nothing disagreed."""
        return not self.problems


def _read(path: Path, limit: int, problems: list[str]) -> bytes | None:
    """A file of the folder, bounded, never through a link; None after noting why not."""
    from plimsoll_ci.files import read_bounded

    try:
        return read_bounded(path, limit, path.name, follow=False)
    except BadInput as e:
        problems.append(str(e))
        return None


def _bundle_bytes(folder: Path, problems: list[str]) -> tuple[bytes | None, str]:
    from plimsoll_ci.attest.bundle import MAX_BUNDLE_BYTES, unpack

    plain, packed = folder / artifacts.BUNDLE, folder / artifacts.BUNDLE_GZ
    data = gz = None
    if plain.exists() or plain.is_symlink():
        data = _read(plain, MAX_BUNDLE_BYTES, problems)
        if data is None:
            return None, artifacts.BUNDLE
    if packed.exists() or packed.is_symlink():
        raw = _read(packed, MAX_BUNDLE_BYTES, problems)
        try:
            if raw is not None and raw[:2] != b"\x1f\x8b":
                raise BadInput("not gzip")
            gz = None if raw is None else unpack(raw, packed)
        except BadInput as e:
            problems.append(f"{artifacts.BUNDLE_GZ}: not a whole gzip stream within the bound "
                            f"({e})")
            gz = b""
    if data is not None and gz:
        if gz != data:
            problems.append(f"{artifacts.BUNDLE_GZ}: does not hold the same bytes as "
                            f"{artifacts.BUNDLE}")
        return data, artifacts.BUNDLE
    if data is not None:
        return data, artifacts.BUNDLE
    if gz is not None:
        return gz or None, artifacts.BUNDLE_GZ
    if not (packed.exists() or packed.is_symlink()):
        problems.append(f"{artifacts.BUNDLE}: missing (nor {artifacts.BUNDLE_GZ}); nothing to "
                        "verify")
    return None, artifacts.BUNDLE


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _SHOW else text[:_SHOW - 3] + "..."


def _window(text: str, col: int) -> str:
    start = max(0, col - 20)
    piece = text[start:col + 30]
    return ("..." if start else "") + repr(piece) + ("..." if col + 30 < len(text) else "")


def json_diff(have: Any, want: Any, path: str = "") -> list[str]:
    """Where two JSON values differ: `path: the file says X, the records say Y` (first few)."""
    if type(have) is not type(want) and not (isinstance(have, int | float)
                                             and isinstance(want, int | float)
                                             and not isinstance(have, bool)
                                             and not isinstance(want, bool)):
        return [f"{path or '(top)'}: the file says {_short(have)}, the records say {_short(want)}"]
    if isinstance(want, dict):
        out = []
        for k in sorted(set(have) | set(want)):
            at = f"{path}.{k}" if path else str(k)
            if k not in want:
                out.append(f"{at}: in the file, not in the records")
            elif k not in have:
                out.append(f"{at}: missing from the file (the records say {_short(want[k])})")
            else:
                out += json_diff(have[k], want[k], at)
        return out
    if isinstance(want, list):
        if len(have) != len(want):
            return [f"{path}: {len(have)} items in the file, {len(want)} in the records"]
        out = []
        for i, (a, b) in enumerate(zip(have, want, strict=True)):
            out += json_diff(a, b, f"{path}[{i}]")
        return out
    if have != want:
        return [f"{path or '(top)'}: the file says {_short(have)}, the records say {_short(want)}"]
    return []


def _compare(name: str, have: bytes, want: str) -> list[str]:
    if have == want.encode("utf-8"):
        return []
    if name.endswith(".json"):
        try:
            doc = json.loads(have)
        except (ValueError, UnicodeDecodeError):
            return [f"{name}: not valid JSON; the records give another file"]
        diffs = json_diff(doc, json.loads(want))
        if not diffs:
            return [f"{name}: the same values, but not the bytes the records give (spacing, key "
                    "order or escapes changed)"]
        shown = diffs[:3]
        if len(diffs) > 3:
            shown[-1] += f" (and {len(diffs) - 3} more differences)"
        return [f"{name}: {d}" for d in shown]
    got = have.decode("utf-8", "replace").split("\n")
    exp = want.split("\n")
    for i, (a, b) in enumerate(zip(got, exp, strict=False), 1):
        if a != b:
            col = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                       min(len(a), len(b)))
            return [f"{name} line {i} column {col + 1}: the file says {_window(a, col)}, the "
                    f"records say {_window(b, col)}"]
    return [f"{name}: {len(got)} lines in the file, {len(exp)} from the records (cut or added)"]


def _check_run_json(folder: Path, read: Any, problems: list[str]) -> None:
    path = folder / artifacts.RUN
    if not (path.exists() or path.is_symlink()):
        problems.append(f"{artifacts.RUN}: missing")
        return
    raw = _read(path, MAX_FILE, problems)
    if raw is None:
        return
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        problems.append(f"{artifacts.RUN}: not valid JSON")
        return
    job = read.job or {}
    kind, section = unseen_section(job) if job else ("fresh", {})
    expect = {
        ("status",): "done",
        ("job", "sha256"): job.get("job_sha256"),
        ((f"{kind}_commitment",) if kind == "fresh" else ("held_out_commitment",)):
            section.get("commitment"),
        ("gradings", "signed"): len(read.records),
        ("gradings", "planned"): len(job.get("plan") or []),
    }
    if read.sessions:
        expect[("sessions", "done")] = len(read.sessions)
    for keys, want in expect.items():
        have: Any = doc
        for k in keys:
            have = have.get(k) if isinstance(have, dict) else None
        if have != want:
            problems.append(f"{artifacts.RUN}: {'.'.join(keys)} is {_short(have)}, the records "
                            f"say {_short(want)}")


def verify(folder: str | Path, public: PublicKey, shard_keys: tuple | None = None) -> Verified:
    """Verify a squeeze out folder under `public` (BadInput when the folder is not there); a
    merged folder's kept shards under `shard_keys` (attest.pinned.Pinned) when given."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such folder; pass the --out folder of `squeeze run`")
    problems: list[str] = []
    pub = folder / artifacts.PUBLIC_KEY
    if not (pub.exists() or pub.is_symlink()):
        problems.append(f"{artifacts.PUBLIC_KEY}: missing")
    else:
        from plimsoll_ci.attest.keys import load_public_key

        try:
            here = load_public_key(pub, follow=False)
            if here.keyid != public.keyid:
                problems.append(f"{artifacts.PUBLIC_KEY}: key {here.keyid[:16]}..., not the key "
                                f"given with --pub ({public.keyid[:16]}...)")
        except BadInput as e:
            problems.append(f"{artifacts.PUBLIC_KEY}: not an Ed25519 public key (PEM) ({e})")
    data, bundle_name = _bundle_bytes(folder, problems)
    if data is None:
        return Verified(problems, None, 0)
    derived = artifacts.derive(data, public, _set_bundles(folder, problems))
    if derived.files is None:
        problems += [f"{bundle_name}: {p}" for p in derived.read.problems]
        problems += list(derived.problems)
        return Verified(problems, None, derived.read.count)
    for name, text in derived.files.items():
        path = folder / name
        if not (path.exists() or path.is_symlink()):
            problems.append(f"{name}: missing")
            continue
        have = _read(path, MAX_FILE, problems)
        if have is not None:
            problems += _compare(name, have, text)
    _check_run_json(folder, derived.read, problems)
    notes = _held_out_note(derived.read)
    assert derived.read.job is not None  # (files are derived only from a read with its job)
    count = derived.read.job.get("fresh_sets", 0)
    for n in range(1, count + 1):  # each set's run.json states what its records state
        found: list[str] = []
        _check_run_json(fresh_sets.folder(folder, n), _set_read(public, folder, n), found)
        problems += [f"{fresh_sets.SETS}/{n}/{p}" for p in found]
    if count:
        notes.append(f"fresh sets: {count} more, each committed before any flight; every loop's "
                     "own controller's fresh score on each recomputed from its records")
    from plimsoll_ci.squeeze import merge

    shards = folder / merge.SHARDS
    if shards.is_symlink():
        problems.append(f"{merge.SHARDS}: a symbolic link (never followed)")
    elif shards.is_dir():
        found, said = merge.check_provenance(folder, data, shard_keys)
        problems += found
        notes += said
    result = json.loads(derived.files["result.json"])
    return Verified(problems, None if problems else result, derived.read.count,
                    len(derived.read.sessions), tuple(notes))


def _set_bundles(folder: Path, problems: list[str]) -> dict[int, bytes]:
    """The bundle of each `sets/I/` folder, by I (read bounded, never through a link)."""
    sets = folder / fresh_sets.SETS
    if sets.is_symlink():
        problems.append(f"{fresh_sets.SETS}: a symbolic link (never followed)")
        return {}
    if not sets.is_dir():
        return {}
    out: dict[int, bytes] = {}
    for i, d in enumerate(sorted(sets.iterdir())):
        if i > 4 * MAX_SETS:
            problems.append(f"{fresh_sets.SETS}: more than {4 * MAX_SETS} entries")
            break
        if d.is_symlink() or not d.is_dir() or not d.name.isdigit() or d.name != str(int(d.name)):
            problems.append(f"{fresh_sets.SETS}/{d.name}: not a set folder (sets/1, sets/2, ...)")
            continue
        found: list[str] = []
        data, _name = _bundle_bytes(d, found)
        problems += [f"{fresh_sets.SETS}/{d.name}/{p}" for p in found]
        if data is not None:
            out[int(d.name)] = data
    return out


def _set_read(public: PublicKey, folder: Path, n: int) -> Any:
    """Set `n`'s records as read back (it verified already: `artifacts.derive`)."""
    from plimsoll_ci.squeeze import records

    found: list[str] = []
    raw, _name = _bundle_bytes(fresh_sets.folder(folder, n), found)
    return records.read(raw or b"", public)


def _held_out_note(read: Any) -> list[str]:
    """`held-out set ...: committed at T, graded at T2 > T` for a run on a held-out set."""
    kind, section = unseen_section(read.job)
    out = []
    if kind == "held_out":
        first, when = min(r.started for r in read.records), section["committedOn"]
        out.append(f"held-out set {section['commitment'][:16]}... ({section['count']} seeds): "
                   f"committed at {when}, graded at {first} {'>' if first > when else '>='} "
                   f"{when} (no grading started before the commitment; its reveal matches it)")
    if (read.seed_check or {}).get("allowWeak"):
        out.append("weak seeds allowed: the seed lint flagged the unseen set and the run graded "
                   "it anyway (--allow-weak-seeds, in every signed record)")
    return out
