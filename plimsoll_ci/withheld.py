"""Withheld sets: build, load, validate. Digests only — a set never holds a value.

Format (JSON, canonical: sorted keys, two-space indent, trailing newline)::

    {"format": "plimsoll-withheld/1", "scheme": "sha256" | "hmac-sha256", "key_id": str | null,
     "mode": "refuse" | "warn",
     "entries": [{"id": "seeds.txt:2", "kind": "value", "type": "number", "digest": hex, "shape": {}},
                 {"id": "sim/gen.py", "kind": "file", "digest": hex, "size": int},
                 {"id": "sim/gen.py", "kind": "source", "fingerprints": [hex16...],
                  "threshold": 0.3}]}

Sealed sets (the tripwire's, issue 8) have the same shape with format `plimsoll-sealed/1`.
The shape of a value (digit count, first word length, total length) is stored beside its digest:
the scan's prefilter needs it, and it tells no more than a value's length.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput, WithheldSetError
from plimsoll_ci.files import MiB, read_bounded
from plimsoll_ci.match.canonical import classify, digest, file_digest, key_id
from plimsoll_ci.match.fingerprint import fingerprints
from plimsoll_ci.match.index import number_shape, text_shape_dict

FORMAT = "plimsoll-withheld/1"
SEALED_FORMAT = "plimsoll-sealed/1"
FORMATS = (FORMAT, SEALED_FORMAT)
DEFAULT_SOURCE_THRESHOLD = 0.3
MAX_SET_BYTES = 64 * MiB  # far past any set built from a harness; /dev/zero is refused
MAX_KEY_FILE_BYTES = 64 * 1024  # an HMAC key is a line; anything bigger is not a key
MAX_WITHHELD_FILE_BYTES = 64 * MiB  # a whole file withheld (`--file`, `--source`), as a set
HASH_RATE = 1e10  # SHA-256 per second on one GPU, the attacker we warn about


class Entry(NamedTuple):
    id: str
    kind: str  # "value" | "file" | "source"
    digest: str = ""  # hex (value, file)
    vtype: str = ""  # "number" | "text" for values
    shape: dict = {}
    fingerprints: frozenset = frozenset()
    threshold: float = DEFAULT_SOURCE_THRESHOLD


# A value entry built from its seven fields at once (`Entry(...)` with its defaults, without the
# keyword handling of the record's constructor: a set's load makes one per value).
_NO_FINGERPRINTS: frozenset = Entry._field_defaults["fingerprints"]


def _value_entry(fields: tuple) -> Entry:
    return tuple.__new__(Entry, fields)


class WithheldSet(NamedTuple):
    origin: str
    format: str
    scheme: str
    key_id: str | None
    mode: str
    entries: list[Entry]
    digest: str  # SHA-256 of the set file's canonical bytes
    key: bytes | None
    # What a command should tell its user (a key given for an unkeyed set, a set with no entry).
    notes: tuple[str, ...] = ()

    @property
    def keyed(self) -> bool:
        return self.scheme == "hmac-sha256"


def key_from(env: str | None = None, file: str | None = None,
             flags: tuple[str, str] = ("--key-env", "--key-file")) -> bytes | None:
    """The HMAC key from an environment variable or a file; BadInput when named but missing.

    `flags` are what named the variable and the file (`--key-env`, `--key-file`), for messages. A variable name that is not a name, or a key file that does not exist, is not
    repeated: a key given there by mistake is never printed.
    """
    from plimsoll_ci.envname import said, variable

    flag, file_flag = flags
    if env and file:
        raise BadInput(f"give the key once: {flag} or {file_flag}, not both")
    if env:
        val = os.environ.get(variable(env, flag))
        if not val:
            raise BadInput(f"{flag} {said(env)}: the environment variable is not set or empty; "
                           f"export it (from a CI secret) or use {file_flag}")
        return val.encode("utf-8")
    if file:
        if not os.path.lexists(file):
            raise BadInput(f"{file_flag}: cannot read: no such file (the path given is not "
                           "repeated, in case it is the key itself); give the path of the "
                           "file holding the key")
        # bounded, a regular file only: /dev/zero or a FIFO given as the key file is refused
        data = read_bounded(file, MAX_KEY_FILE_BYTES, f"key file {file}").rstrip(b"\r\n")
        if not data:
            raise BadInput(f"key file {file}: empty")
        return data
    return None


_SAID = 5  # warnings said one entry a line before they are counted
GUESSABLE_BITS = 64  # below this, a plain SHA-256 digest of a value is worth brute-forcing


def shape_bits(vtype: str, shape: dict) -> float:
    """The one estimate of a value's guessable entropy, in bits, from the shape its set stores.

    Digests are of canonical forms, so a brute force covers those: a number costs log2(10) a
    digit, text log2(36) a character (lower-case letters and digits; case and white space are
    canonicalized away). A 10-digit seed is about 33 bits: minutes of hashing.
    """
    if vtype == "number":
        return int(shape.get("digits", 0)) * math.log2(10)
    return int(shape.get("len", 0)) * math.log2(36)


def entropy_bits(value: str) -> float:
    """`shape_bits` of a value as `build_set` would store it."""
    vtype, canon = classify(value)
    return shape_bits(vtype, number_shape(canon) if vtype == "number" else {"len": len(canon)})


def _duration(seconds: float) -> str:
    for unit, size in (("years", 3.15e7), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            n = seconds / size
            return f"{n:,.0f} {unit if round(n) != 1 else unit[:-1]}"
    if seconds < 1.5:
        return "a second or less"
    return f"{seconds:.0f} seconds"


def entry_name(path: str) -> str:
    """How entry ids name a file given on the command line: the path as given when it stays
    inside the current folder (`sub/seeds.txt`), else its base name (`seeds.txt`); never an
    absolute path, which would publish the machine's folders in the set and every report."""
    p = Path(path)
    try:
        inside = Path(os.path.abspath(p)).relative_to(Path.cwd().resolve())
    except ValueError:
        return p.name
    return inside.as_posix()


def read_values(path: str, id_prefix: str | None = None, select: str | None = None,
                data: bytes | None = None) -> list[tuple[str, str]]:
    """(entry id, value) for every value of a values file (`data`, else read within
    `valuefiles.VALUES_BOUND`). A plain file gives every non-empty, non-comment line, id
    `PREFIX:LINE`; a structured one (YAML, JSON, TOML, CSV: `valuefiles.structure`) the values
    `select` picks, id `PREFIX:PATH` (`seeds.yaml:heldout.seeds[0]`; a CSV row's `PREFIX:LINE`),
    and without `select` it is refused, naming the paths it could take. The prefix is
    `id_prefix`, else `entry_name(path)`."""
    from plimsoll_ci import valuefiles

    if data is None:
        data = valuefiles.read(path)
    prefix = id_prefix if id_prefix is not None else entry_name(path)
    fmt = valuefiles.structure(path, data)
    if fmt is not None:
        return [(f"{prefix}:{v.where}", v.text)
                for v in valuefiles.values(data, path, fmt, select)]
    if select is not None:
        raise BadInput(f"--select given for values file {path}, a plain file of one value a "
                       "line (not YAML, JSON, TOML or CSV); drop --select for it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"values file {path}: not UTF-8 at byte {e.start}") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        v = line.strip()
        if v and not v.startswith("#"):
            out.append((f"{prefix}:{n}", v))
    return out


class SetOptions(NamedTuple):
    """How `build_set` builds a set: its HMAC key (None: unkeyed), format tag, mode and the
    source entries' fingerprint threshold."""

    key: bytes | None = None
    tag: str = FORMAT
    mode: str = "refuse"
    threshold: float = DEFAULT_SOURCE_THRESHOLD


def build_set(
    values: Iterable[tuple[str, str]] = (),
    files: Iterable[tuple[str, bytes]] = (),
    sources: Iterable[tuple[str, bytes]] = (),
    **options: Any,
) -> tuple[dict, list[str]]:
    """The set document for these entries, and warnings for stderr. Neither holds a value.
    `options` are `SetOptions`' fields by keyword (`key=`, `tag=`, `mode=`, `threshold=`)."""
    key, tag, mode, threshold = SetOptions(**options)
    if mode not in ("refuse", "warn"):
        raise BadInput(f"mode must be refuse or warn, not {mode!r}")
    entries: list[dict] = []
    warnings: list[str] = []
    seen: set[str] = set()
    same: list[str] = []
    weak: list[tuple[str, float]] = []
    for eid, value in values:
        vtype, canon = classify(value)
        if not canon:
            raise BadInput(f"{eid}: the value has no letters or digits to match")
        d = digest(vtype, canon, key).hex()
        if d in seen:
            same.append(eid)
        seen.add(d)
        if vtype == "number":
            shape = number_shape(canon)
            bits = shape_bits(vtype, shape)
        else:
            shape = text_shape_dict(canon, key)
            bits = shape_bits(vtype, {"len": len(canon)})
        entries.append({"id": eid, "kind": "value", "type": vtype, "digest": d, "shape": shape})
        if key is None and bits < GUESSABLE_BITS:
            weak.append((eid, bits))
    # One line per entry for the first few, then a count: a million guessable seeds are said in
    # six lines, not a million.
    warnings += [f"{eid}: same value as an earlier entry (kept; both ids will be named)"
                 for eid in same[:_SAID]]
    if len(same) > _SAID:
        warnings.append(f"and {len(same) - _SAID} more entries with the same value as an earlier "
                        "entry (kept)")
    for eid, bits in weak[:_SAID]:
        warnings.append(
            f"{eid}: about {bits:.0f} bits of guessable entropy; plain SHA-256 of it "
            f"is brute-forced in about {_duration(2**bits / HASH_RATE)} at {HASH_RATE:.0e} "
            "hashes/s. Key the set: --key-env VAR or --key-file FILE (outside the repository)")
    if len(weak) > _SAID:
        least = min(b for _, b in weak)
        warnings.append(f"and {len(weak) - _SAID} more values under {GUESSABLE_BITS} bits of "
                        f"guessable entropy (the weakest about {least:.0f} bits): key the set")
    for eid, data in files:
        entries.append({"id": eid, "kind": "file", "digest": file_digest(data, key).hex(),
                        "size": len(data)})
    for eid, data in sources:
        fps = sorted(fingerprints(data, key))
        if len(fps) < 4:
            warnings.append(f"{eid}: source too short to fingerprint reliably ({len(fps)} prints)")
        entries.append({"id": eid, "kind": "source", "fingerprints": [f"{x:016x}" for x in fps],
                        "threshold": threshold})
    dup = [i for i, n in Counter(e["id"] for e in entries).items() if n > 1]
    if dup:
        shown = ", ".join(sorted(dup)[:5]) + (f" and {len(dup) - 5} more" if len(dup) > 5 else "")
        raise BadInput(f"duplicate entry ids: {shown}; give each path once (a --source entry "
                       "also finds exact copies, so --file beside it adds nothing), and name "
                       "values files that share a name apart with --id-prefix")
    doc = {
        "format": tag,
        "scheme": "hmac-sha256" if key is not None else "sha256",
        "key_id": key_id(key) if key is not None else None,
        "mode": mode,
        "entries": entries,
    }
    return doc, warnings


def dumps(doc: dict) -> str:
    """The canonical text of a set document: exactly `json.dumps(doc, indent=2, sort_keys=True)`
    and a newline, written without the standard library's pure-Python indenting encoder (17 s
    for a million entries; this takes a few)."""
    out: list[str] = []
    _dump(doc, "\n", out)
    out.append("\n")
    return "".join(out)


_STRING = json.encoder.encode_basestring_ascii
_FLOAT = json.JSONEncoder().iterencode  # NaN, Infinity and repr, as json.dumps writes them


def _leaf(o: object) -> str | None:
    """The JSON text of a scalar as json.dumps writes it, or None for a list or an object."""
    t = type(o)
    if t is str:
        # (`type(o)` once, in a variable: mypy does not narrow `o` through it)
        return _STRING(o)  # type: ignore[arg-type]
    if t is int:
        return int.__repr__(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, float):
        return "".join(_FLOAT(o))
    if isinstance(o, int):  # an int subclass
        return int.__repr__(o)
    if isinstance(o, str):
        return _STRING(o)
    if isinstance(o, dict | list | tuple):
        return None
    raise TypeError(f"not JSON: {type(o).__name__}")


# (an object's keys in their order, its indent) -> (key, its sorted place's text before the value)
_OBJECT_PARTS: dict[tuple, list[tuple[str, str]]] = {}


def _dump(o: object, newline: str, out: list[str]) -> None:
    """Append `o` as json.dumps(indent=2, sort_keys=True) writes it at the indent `newline`."""
    leaf = _leaf(o)
    if leaf is not None:
        out.append(leaf)
        return
    inner = newline + "  "
    if isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        shape = (tuple(o), newline)  # a set's entries share a few shapes: their text is kept
        parts = _OBJECT_PARTS.get(shape)
        if parts is None:
            parts = [(k, ("{" if n == 0 else ",") + inner + _STRING(k) + ": ")
                     for n, k in enumerate(sorted(o))]
            if len(_OBJECT_PARTS) < 4096:
                _OBJECT_PARTS[shape] = parts
        for k, before in parts:
            v = o[k]
            t = type(v)
            if t is str:
                out.append(before + _STRING(v))
                continue
            leaf = int.__repr__(v) if t is int else _leaf(v)
            if leaf is not None:
                out.append(before + leaf)
            else:
                out.append(before)
                _dump(v, inner, out)
        out.append(newline + "}")
        return
    if not o:
        out.append("[]")
        return
    sep = "[" + inner
    for v in o:  # type: ignore[attr-defined]  # (a list: `_leaf` said)
        leaf = _leaf(v)
        if leaf is not None:
            out.append(sep + leaf)
        else:
            out.append(sep)
            _dump(v, inner, out)
        sep = "," + inner
    out.append(newline + "]")


def load(path: str | os.PathLike[str], key: bytes | None = None,
         need_key: bool = True) -> WithheldSet:
    """Read and validate a withheld (or sealed) set file (`parse`)."""
    p = Path(path)
    if not os.path.lexists(p):
        raise WithheldSetError(f"withheld set {p}: no such file")
    try:  # a device or a FIFO given as --withheld is never read; a huge file is refused
        raw = read_bounded(p, MAX_SET_BYTES, f"withheld set {p}")
    except BadInput as e:
        raise WithheldSetError(str(e)) from None
    return parse(parse_json(raw, str(p)), key=key, origin=str(p), raw=raw,
                 need_key=need_key)


def parse_json(raw: bytes, origin: str) -> object:
    """A set file's JSON; WithheldSetError (exit 2) naming `origin` when it is not valid JSON or
    nests deeper than the parser goes (never a RecursionError traceback)."""
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        pos = f"line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) \
            else f"byte {e.start}"
        raise WithheldSetError(f"withheld set {origin}: not valid JSON at {pos}") from None
    except RecursionError:
        raise WithheldSetError(f"withheld set {origin}: nested too deeply to be a set file "
                               "(a set is an object holding a list of entries); rebuild it "
                               "with `plimsoll-ci withheld build`") from None


def parse(doc: object, key: bytes | None = None, origin: str = "<set>",
          raw: bytes | None = None, need_key: bool = True) -> WithheldSet:
    """Validate a set document; every problem is reported at once.

    A keyed set needs its key (a wrong key is always refused); with `need_key` False a keyed set
    without one is read for its ids and kinds only (its `key` is None: it cannot scan). A key
    given for an unkeyed set, and a set with no entries, are said in `notes`.
    """
    problems: list[str] = []
    if not isinstance(doc, dict):
        raise WithheldSetError(f"withheld set {origin}: not a JSON object")
    fmt = doc.get("format")
    if fmt not in FORMATS:
        raise WithheldSetError(f"withheld set {origin}: format is {fmt!r}, expected {FORMAT!r}")
    scheme = doc.get("scheme")
    if scheme not in ("sha256", "hmac-sha256"):
        problems.append(f"scheme is {scheme!r}, expected sha256 or hmac-sha256")
    mode = doc.get("mode", "refuse")
    if mode not in ("refuse", "warn"):
        problems.append(f"mode is {mode!r}, expected refuse or warn")
    kid = doc.get("key_id")
    notes: list[str] = []
    noun = "sealed set" if fmt == SEALED_FORMAT else "withheld set"
    if scheme == "hmac-sha256":
        if key is None and need_key:
            where = "" if fmt == SEALED_FORMAT else ", or `key:` in plimsoll.yaml"
            raise WithheldSetError(
                f"{noun} {origin} is keyed (key id {kid}): give its key with --key-env VAR "
                f"or --key-file FILE{where}")
        if key is not None and key_id(key) != kid:
            raise WithheldSetError(
                f"{noun} {origin}: the key given has id {key_id(key)}, the set was built "
                f"with key id {kid}: wrong key")
    elif scheme == "sha256":
        if key is not None:
            notes.append(f"{noun} {origin} is not keyed (scheme sha256): the key given is "
                         "not used. Rebuild the set keyed (withheld build --key-env VAR) so its "
                         "digests cannot be brute-forced, or stop passing a key")
        key = None
    raw_entries = doc.get("entries")
    entries: list[Entry] = []
    if not isinstance(raw_entries, list):
        problems.append("entries must be a list")
        raw_entries = []
    for i, e in enumerate(raw_entries):
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            problems.append(f"entry {i + 1}: must be an object with a string id")
            continue
        kind = e.get("kind")
        try:
            if kind == "value":
                d = e["digest"]
                if not (isinstance(d, str) and len(d) == 64):
                    raise ValueError("digest must be 64 hex digits")
                bytes.fromhex(d)
                vt = e.get("type")
                if vt not in ("number", "text"):
                    raise ValueError("type must be number or text")
                shape = e.get("shape")
                if not isinstance(shape, dict):
                    raise ValueError("shape must be an object")
                if vt == "number":
                    int(shape["digits"]), int(shape["sig"])
                else:
                    int(shape["first"]), int(shape["len"])
                entries.append(_value_entry((e["id"], "value", d, vt, shape, _NO_FINGERPRINTS,
                                             DEFAULT_SOURCE_THRESHOLD)))
            elif kind == "file":
                d = e["digest"]
                bytes.fromhex(d)
                if len(d) != 64:
                    raise ValueError("digest must be 64 hex digits")
                entries.append(Entry(e["id"], "file", d))
            elif kind == "source":
                fps = frozenset(int(x, 16) for x in e["fingerprints"])
                thr = float(e.get("threshold", DEFAULT_SOURCE_THRESHOLD))
                if not 0 < thr <= 1:
                    raise ValueError("threshold must be in (0, 1]")
                entries.append(Entry(e["id"], "source", fingerprints=fps, threshold=thr))
            else:
                raise ValueError(f"kind {kind!r} is not value, file or source")
        except (KeyError, TypeError, ValueError) as err:
            msg = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            problems.append(f"entry {i + 1} ({e['id']}): {msg}")
    if problems:
        raise WithheldSetError(f"{noun} {origin}: " + "; ".join(problems))
    if not entries:
        notes.append(f"{noun} {origin} has no entries: it withholds nothing, so every "
                     "scan against it passes; rebuild it from your values")
    if raw is None:
        raw = dumps(doc).encode()
    # (scheme is one of the two: any other was a problem raised above)
    return WithheldSet(origin, fmt, str(scheme), kid, mode, entries,
                       hashlib.sha256(raw).hexdigest(), key, tuple(notes))


def guessable_values(wset: WithheldSet) -> Sequence[Entry]:
    """Value entries of an unkeyed set (their digests can be brute-forced when guessable)."""
    if wset.keyed:
        return []
    return [e for e in wset.entries if e.kind == "value"]
