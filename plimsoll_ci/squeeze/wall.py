"""The wall between what a squeeze keeps back and the rebuilds' models, and the checks of it.

What is kept back (`Secrets`): the practice seeds, the fresh seeds (or the held-out seeds flown in
their place), the simulator's generator (its source and its magic constant), and any withheld set
the run was given. They are sealed here, in
memory, under a key drawn for the run and never written (`Secrets.sealed`: digests only).

What crosses the wall, and how each crossing is checked:
- every request to a model goes through the recording proxy (`Recording`), one folder per session;
- every file the harness adds to a rebuild's sandbox besides the model's own (`record_kit`) is
  written into that folder too, so the same scan reads it;
- after the sessions, `check_session` runs the tripwire over the folder; `scan_workspace` ship-scans
  what the model wrote before anything of it is graded; `check_smoke` refuses smoke seeds that are
  sealed ones.

This is the one module of the squeeze that imports the recorder, the tripwire and the canary, so
moving them is a change here alone.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.grading.fresh import FreshSet

GENERATOR_SOURCE = "generator-source"
GENERATOR_MAGIC = "generator-magic"
KIT_FOLDER = "sandbox-kit"  # in a session's recording folder: what the harness ships in sandboxes
CANARY_PLACES = ("practice-seed", "fresh-seed", "generator")


class Secrets(NamedTuple):
    """What the rebuilds must never see, and its sealed digests."""

    practice: tuple[int, ...]
    fresh: FreshSet
    generator: bytes  # the generator's source
    # WithheldSets: practice:N, fresh:N (or sealed:N), generator-magic, generator-source; then
    # any withheld set
    sealed: tuple[Any, ...]
    held_out: tuple[int, ...] = ()  # a held-out set flown instead of a fresh one

    def seeds(self) -> tuple[int, ...]:
        """Every seed kept back: practice, fresh and held-out (smoke seeds avoid them all)."""
        return self.practice + self.fresh.seeds + self.held_out


def generator_path() -> Path:
    """The simulator's generator source file."""
    import plimsoll_sim as sim

    return Path(sim.__file__).parent / "generator.py"


def seal(practice: tuple[int, ...], fresh: FreshSet | None, generator: bytes | None = None,
         withheld: Iterable[Any] = (), held_out: FreshSet | None = None) -> Secrets:
    """Seal the run's secrets under a key drawn now (never written, never shown); `fresh` None
    before a run has drawn one (a recipe is squeezed before), or when a held-out set committed
    earlier (`held_out`, entries `sealed:N`) is flown in its place."""
    import plimsoll_sim as sim
    from plimsoll_ci.withheld import build_set, parse

    source = generator_path().read_bytes() if generator is None else generator
    values = [(f"practice:{n}", str(s)) for n, s in enumerate(practice, 1)]
    values += [(f"fresh:{n}", str(s)) for n, s in enumerate(fresh.seeds if fresh else (), 1)]
    values += [(f"sealed:{n}", str(s))
               for n, s in enumerate(held_out.seeds if held_out else (), 1)]
    values.append((GENERATOR_MAGIC, str(sim.generator.MAGIC)))
    key = secrets.token_bytes(32)
    doc, _warnings = build_set(values=values, sources=[(GENERATOR_SOURCE, source)], key=key,
                               tag="plimsoll-sealed/1")
    sealed = parse(doc, key=key, origin="<the squeeze's sealed set>")
    return Secrets(tuple(practice), fresh or FreshSet((), b""), source, (sealed, *withheld),
                   held_out.seeds if held_out else ())


def _sets(sealed: Any) -> tuple[Any, ...]:
    return tuple(sealed) if isinstance(sealed, tuple | list) else (sealed,)


# ---- smoke seeds ---------------------------------------------------------------------------------


def draw_smoke(count: int, avoid: Iterable[int] = ()) -> tuple[int, ...]:
    """Throwaway seeds for one session's `fly`, from the operating system's CSPRNG, none of them
    in `avoid` (the practice, fresh and held-out seeds: `Secrets.seeds()`)."""
    from plimsoll_ci.grading import seedsets

    return seedsets.draw_smoke(count, avoid=avoid)


def check_smoke(seeds: tuple[int, ...], sealed: Any) -> list[str]:
    """The sealed entries any smoke seed is (practice, fresh, held-out or a canary); [] when none."""
    text = "\n".join(str(s) for s in seeds).encode()
    return sorted({f.entry for f in _scan_bytes(text, "smoke-seeds", sealed)})


# ---- scanning ------------------------------------------------------------------------------------


def _scan_bytes(data: bytes, name: str, sealed: Any) -> list[Any]:
    from plimsoll_ci.shipscan.scan import Scanner

    found = []
    for one in _sets(sealed):
        got, _notes = Scanner(one).scan_file(data, name)
        found += got
    return found


def scan_workspace(files: dict[str, bytes], sealed: Any) -> list[str]:
    """What the workspace carries of the sealed set: `path:line entry` (never a value)."""
    out = set()
    for path, data in sorted(files.items()):
        for f in _scan_bytes(data, path, sealed):
            where = f"{path}:{f.line}" if f.where == "content" else f"{path} (name)"
            out.add(f"{where} {f.entry}")
    return sorted(out)


def scan_text(text: str, sealed: Any) -> list[str]:
    """Sealed entries a text (a recipe, a brief) carries."""
    return sorted({f.entry for f in _scan_bytes(text.encode("utf-8"), "text", sealed)})


# ---- the recording -------------------------------------------------------------------------------


class Recording:
    """The recording proxy in front of one session's endpoint; `url` is the base URL to use."""

    def __init__(self, upstream: str, folder: Path) -> None:
        from plimsoll_ci.tripwire.recorder import start_in_thread

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._server, origin = start_in_thread(upstream, str(self.folder))
        self.url = origin  # the upstream's path prefix (e.g. /v1) is added by the proxy

    def close(self) -> None:
        """Stop the proxy."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record_kit(folder: Path, kit: dict[str, bytes]) -> None:
    """Write what the harness ships into the session's sandboxes into its recording folder."""
    for rel, data in kit.items():
        dest = Path(folder) / KIT_FOLDER / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)


def manifest(folder: Path) -> tuple[int, str]:
    """(requests recorded, SHA-256 of the folder's manifest: every file's path and SHA-256)."""
    lines = []
    requests = 0
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and not p.name.endswith(".part"):
            rel = p.relative_to(folder).as_posix()
            requests += rel.endswith(".request.json") and "/" not in rel
            lines.append(f"{rel}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n")
    digest = hashlib.sha256(b"plimsoll-ci recording v1\x00" + "".join(lines).encode()).hexdigest()
    return requests, digest


# ---- the tripwire --------------------------------------------------------------------------------


class Hit(NamedTuple):
    """A sealed entry found where the harness put text (never the value)."""

    request: str  # recorded file, relative to the session's folder
    place: str  # JSON pointer (and decode chain), or the kit file
    entry: str


class WallCheck(NamedTuple):
    """The tripwire's verdict on one session's recording."""

    hits: list[Hit]  # the harness sent a sealed value: the squeeze fails
    model_wrote: list[str]  # entries the model wrote itself (and their echoes): not a leak
    notes: list[str]


def _message_index(place: str) -> int | None:
    parts = place.split(" > ", 1)[0].split("/")
    if len(parts) >= 3 and parts[1] == "messages" and parts[2].isdigit():
        return int(parts[2])
    return None


def _role(folder: Path, request: str, index: int, cache: dict) -> str | None:
    if request not in cache:
        body = Path(folder) / (request[:-len(".json")] + ".body"
                               if request.endswith(".request.json") else request)
        try:
            cache[request] = json.loads(body.read_bytes()).get("messages")
        except (OSError, ValueError, AttributeError):
            cache[request] = None
    messages = cache[request]
    if isinstance(messages, list) and 0 <= index < len(messages) and \
            isinstance(messages[index], dict):
        return messages[index].get("role")
    return None


def check_session(folder: Path, sealed: Any) -> WallCheck:
    """Run the tripwire over one session's recording and tell the harness's crossings from the
    model's own words.

    Text in an assistant message is the model's. A sealed entry the model wrote itself may come
    back later in a tool result (its own file, printed): that echo carries nothing new, so an
    entry found in a message after the one where the model first wrote it is the model's too.
    Anything else (the brief, a tool result before the model wrote the entry, the tool list, the
    sandbox kit) is the harness sending a sealed value: a hit."""
    from plimsoll_ci.tripwire.requests import scan_requests

    findings, notes = [], []
    for one in _sets(sealed):
        result = scan_requests(str(folder), one, jobs=1)
        findings += result.findings
        notes += result.notes
    roles: dict = {}
    placed = []
    first_own: dict[str, int] = {}
    for f in findings:
        place = f.chain or f.kind
        index = _message_index(place)
        role = _role(folder, f.path, index, roles) if index is not None and \
            f.path.endswith((".request.json", ".request.body")) else None
        placed.append((f, place, index))
        if role == "assistant" and index is not None:  # (a role is read only with an index)
            first_own[f.entry] = min(first_own.get(f.entry, index), index)
    hits = []
    for f, place, index in placed:
        own_from = first_own.get(f.entry)
        if own_from is not None and index is not None and index >= own_from:
            continue
        hits.append(Hit(f.path, place, f.entry))
    hits = sorted(set(hits))
    return WallCheck(hits, sorted(first_own), notes)


# ---- canaries ------------------------------------------------------------------------------------


def make_canary() -> tuple[dict, dict[str, str]]:
    """A canary document for the squeeze's three hiding places, and {place: marker}."""
    from plimsoll_ci.tripwire import canary

    doc, markers = canary.make(list(CANARY_PLACES), {"practice-seed": "number",
                                                     "fresh-seed": "number",
                                                     "generator": "word"})
    return doc, {m.place: m.marker for m in markers}


def canary_dumps(doc: dict) -> str:
    """The canary file's text."""
    from plimsoll_ci.tripwire import canary

    return canary.dumps(doc)


def canary_sealed(path: Path) -> Any:
    """The canary file's marker set (its ids are the places)."""
    from plimsoll_ci.tripwire import canary

    return canary.marker_set(canary.load(str(path)))


def load_sealed(path: str, key: bytes | None = None) -> Any:
    """A sealed set, withheld set or canary file (`--sealed`), as the tripwire reads it."""
    from plimsoll_ci.tripwire.sealed import load_sealed as load

    return load(path, key=key)


def canary_check(path: Path, planted: Path, requests: Path) -> tuple[bool, str]:
    """`canary check`: (passed, its text report)."""
    from plimsoll_ci.tripwire import canary, report

    loaded = canary.load(str(path))
    result = canary.check(loaded, str(planted), str(requests))
    return result.ok, report.canary_text(result, str(planted), str(requests))
