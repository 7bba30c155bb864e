"""The squeeze job file (`squeeze.yaml`): what to grade, against what, judged by which lines.

    course: hard                  # easy | hard
    practice: practice            # the simulator's 16 practice seeds, or a seed file (one per line)
    fresh: {count: 64, sets: 3}   # drawn and committed before any flight; the loops' own
                                  # controllers fly `sets` more fresh sets (sets/I/): the spread
    lines: {flights: 2, percent: 5}
    recipe_tokens: 32
    loops:
      honest:
        controller: loops/honest.py
        recipe: recipes/honest.txt          # optional; counted and checked when present
        rebuilds: [rebuilds/honest/*.py]    # globs of imported rebuild controllers
    control: [control/*.py]                 # rebuilds made with no recipe

Paths and globs are relative to the job file's folder and stay inside it: a path that leaves it,
by `..` or through a link (its own, or a folder's on the way), is refused. The job file and the
practice seed file are read within 1 MiB, the YAML within `yamlsafe`'s bounds. A glob may match
`.py`, `.mjs` or `.js` files (the extension picks the runtime: Python, or JavaScript flown by
node; a job may mix them) or folders holding a `controller.py`, `controller.mjs` or
`controller.js` (a rebuild's workspace). A loop (with its recipe) or
the control group may instead, or as well, have `build: N`: N rebuilds made through a model during
the run (`rebuild.py`), with `sessions: {max_turns: 40, smoke: 4}` bounding each session's replies
and its throwaway flights. Every error names the file and line (exit 2).
"""

from __future__ import annotations

import hashlib
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci import yamlsafe
from plimsoll_ci.errors import BadInput, ConfigError
from plimsoll_ci.files import MiB, inside, read_bounded
from plimsoll_ci.grading.seeds import SEED_FILE_BYTES
from plimsoll_ci.squeeze.verdicts import Lines, exact

TOP_KEYS = ("course", "practice", "fresh", "lines", "recipe_tokens", "loops", "control",
            "sessions")
LOOP_KEYS = ("controller", "recipe", "rebuilds", "build")
CONTROL_KEYS = ("rebuilds", "build")
COURSES = ("easy", "hard")
MAX_FRESH = 10_000
MAX_SETS = 10  # fresh sets the loops' own controllers fly again (each a run folder of its own)
MAX_CONTROLLERS = 1000
MAX_BUILD = 100
MAX_JOB_BYTES = 1 * MiB  # a job file is a page; the bound keeps /dev/zero and a huge file out
CONTROLLER_SUFFIXES = (".py", ".mjs", ".js")  # as `sandbox.stage` stages them
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class Group(NamedTuple):
    """A loop with its rebuilds, or the control group (no loop controller, no recipe)."""

    name: str  # the loop's name, or "control"
    controller: str | None  # the loop's own controller (relative id), None for the control group
    recipe: str | None  # relative path of the recipe file
    rebuilds: tuple[str, ...]  # relative ids of imported rebuilds, sorted
    build: int  # rebuilds to make through a model (0: imported only)
    line: int  # where the group starts in the job file


class Job(NamedTuple):
    """A parsed, checked job file."""

    path: Path
    base: Path  # the job file's folder: every relative id is relative to it
    sha256: str  # of the job file's bytes
    course: str
    practice: tuple[int, ...]  # in the order given
    practice_source: str  # "practice" (the simulator's) or the seed file's relative path
    fresh_count: int
    lines: Lines
    recipe_tokens: int
    loops: tuple[Group, ...]
    control: Group | None
    max_turns: int = 40  # a rebuild session's replies at most
    smoke: int = 4  # throwaway flights a rebuild session's `fly` flies
    fresh_sets: int = 3  # more fresh sets the loops' own controllers fly (`fresh_sets.py`)

    def builds(self) -> int:
        """Rebuilds to make through a model, over every group."""
        return sum(g.build for g in self.groups())

    def groups(self) -> tuple[Group, ...]:
        """Every group: the loops in file order, then the control group."""
        return self.loops + ((self.control,) if self.control is not None else ())


class _Node(NamedTuple):
    value: Any  # dict[str, _Node] | list[_Node] | scalar
    line: int  # where the value starts
    key_line: int = 0  # where its key is, for a mapping's value

    @property
    def at(self) -> int:
        """The line a reader looks for: the key's when there is one."""
        return self.key_line or self.line


def _compose(text: str, origin: str) -> _Node | None:
    import yaml

    root = yamlsafe.compose(text, origin)  # nesting, aliases: bounded, with a line (yamlsafe)
    if root is None:
        return None
    return _convert(root, origin, yaml.SafeLoader(""))


def _convert(node: Any, origin: str, loader: Any) -> _Node:
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, _Node] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise ConfigError(f"{origin} line {k.start_mark.line + 1}: keys must be plain names")
            if k.value in out:
                raise ConfigError(f"{origin} line {k.start_mark.line + 1}: duplicate key "
                                  f"{k.value!r}; keep one")
            out[k.value] = _convert(v, origin, loader)._replace(key_line=k.start_mark.line + 1)
        return _Node(out, line)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_convert(c, origin, loader) for c in node.value], line)
    try:
        value = loader.construct_object(node, deep=True)
    except yaml.YAMLError:
        raise ConfigError(f"{origin} line {line}: a value that cannot be read") from None
    return _Node(value, line)


class _Reader:
    """Typed access to composed nodes; every error names the file and line."""

    def __init__(self, origin: str, base: Path) -> None:
        self.origin = origin
        self.base = base

    def fail(self, line: int, message: str) -> ConfigError:
        return ConfigError(f"{self.origin} line {line}: {message}")

    def mapping(self, node: _Node, what: str, keys: tuple[str, ...]) -> dict[str, _Node]:
        if not isinstance(node.value, dict):
            raise self.fail(node.line, f"{what} must be a mapping with keys {', '.join(keys)}")
        for key, child in node.value.items():
            if key not in keys:
                raise self.fail(child.at, f"{what}: unknown key {key!r}; expected one of "
                                f"{', '.join(keys)}")
        return node.value

    def integer(self, node: _Node, what: str, low: int, high: int) -> int:
        v = node.value
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise self.fail(node.line, f"{what} must be a whole number from {low} to {high}")
        return v

    def number(self, node: _Node, what: str, low: float, high: float) -> Fraction:
        v = node.value
        if isinstance(v, bool) or not isinstance(v, int | float) or not low <= v <= high:
            raise self.fail(node.line, f"{what} must be a number from {low:g} to {high:g}")
        return exact(v)

    def text(self, node: _Node, what: str) -> str:
        if not isinstance(node.value, str) or not node.value.strip():
            raise self.fail(node.line, f"{what} must be a non-empty string")
        return node.value

    def relative(self, node: _Node, what: str) -> str:
        value = self.text(node, what)
        p = Path(value)
        if p.is_absolute() or ".." in p.parts:
            raise self.fail(node.line, f"{what} {value!r}: give a path inside the job's folder "
                            f"{self.base} (no absolute paths, no ..)")
        return p.as_posix()

    def kept_inside(self, line: int, rel: str, what: str) -> Path:
        """`rel` resolved under the job's folder; refused when it, or a folder on the way, is
        a link that leaves the folder (its text would be read, copied and signed)."""
        try:
            return inside(self.base, rel, what)
        except BadInput as e:
            raise self.fail(line, str(e)) from None

    def controller(self, node: _Node, what: str) -> str:
        rel = self.relative(node, what)
        target = self.base / rel
        if not _is_controller(target):
            raise self.fail(node.line, f"{what} {rel}: no such controller (a .py, .mjs or .js "
                            "file, or a folder holding controller.py, .mjs or .js)")
        self.kept_inside(node.line, rel, what)
        return rel

    def globs(self, node: _Node, what: str) -> tuple[str, ...]:
        items = node.value if isinstance(node.value, list) else None
        if not items:
            raise self.fail(node.line, f"{what} must be a list of globs, e.g. "
                            "[rebuilds/honest/*.py]")
        found: set[str] = set()
        for item in items:
            pattern = self.relative(item, what)
            matches = [m for m in sorted(self.base.glob(pattern)) if _is_controller(m)]
            if not matches:
                raise self.fail(item.line, f"{what}: {pattern!r} matches no controller (a .py, "
                                ".mjs or .js file, or a folder holding controller.py, .mjs "
                                "or .js)")
            for m in matches:
                rel = m.relative_to(self.base).as_posix()
                if ".." in Path(rel).parts:
                    raise self.fail(item.line, f"{what}: {pattern!r} reaches outside the job's "
                                    "folder")
                self.kept_inside(item.line, rel, what)
                found.add(rel)
        return tuple(sorted(found))


def _is_controller(p: Path) -> bool:
    if p.is_symlink():
        return False
    if p.is_file():
        return p.suffix in CONTROLLER_SUFFIXES
    return p.is_dir() and any((p / f"controller{s}").is_file() for s in CONTROLLER_SUFFIXES)


def parse(text: str, origin: str, base: Path, digest: str = "") -> Job:
    """Parse job text; `origin` names the file in messages, `base` is its folder."""
    base = Path(base).resolve()
    r = _Reader(origin, base)
    root = _compose(text, origin)
    if root is None:
        raise ConfigError(f"{origin} line 1: empty job file; it needs at least course: and loops:")
    top = r.mapping(root, "the job", TOP_KEYS)
    for key in ("course", "loops"):
        if key not in top:
            raise r.fail(root.line, f"missing {key}: (see docs/squeeze.md for the job's shape)")
    course = top["course"].value
    if course not in COURSES:
        raise r.fail(top["course"].line, f"course must be {' or '.join(COURSES)}")
    practice, source = _practice(r, top.get("practice"))
    fresh_count, fresh_sets = 64, 3
    if "fresh" in top:
        fresh = r.mapping(top["fresh"], "fresh", ("count", "sets"))
        if "count" not in fresh:
            raise r.fail(top["fresh"].line, "fresh needs count: N (seeds drawn for this run)")
        fresh_count = r.integer(fresh["count"], "fresh.count", 1, MAX_FRESH)
        if "sets" in fresh:
            fresh_sets = r.integer(fresh["sets"], "fresh.sets", 0, MAX_SETS)
    lines = Lines(Fraction(2), Fraction(5))
    if "lines" in top:
        given = r.mapping(top["lines"], "lines", ("flights", "percent"))
        flights = (r.number(given["flights"], "lines.flights", 0, len(practice))
                   if "flights" in given else lines.flights)
        percent = (r.number(given["percent"], "lines.percent", 0, 100)
                   if "percent" in given else lines.percent)
        lines = Lines(flights, percent)
    budget = 32
    if "recipe_tokens" in top:
        budget = r.integer(top["recipe_tokens"], "recipe_tokens", 1, 100_000)
    loops_node = top["loops"]
    loops_map = loops_node.value if isinstance(loops_node.value, dict) else None
    if not loops_map:
        raise r.fail(loops_node.line, "loops must map each loop's name to its controller, "
                     "recipe and rebuilds")
    loops = []
    for name, node in loops_map.items():
        if not _NAME.fullmatch(str(name)) or name == "control":
            raise r.fail(node.at, f"loop name {name!r}: use letters, digits, _ . - (not "
                         "'control')")
        loops.append(_loop(r, str(name), node))
    control = _control(r, top["control"]) if "control" in top else None
    max_turns, smoke = 40, 4
    if "sessions" in top:
        given = r.mapping(top["sessions"], "sessions", ("max_turns", "smoke"))
        if "max_turns" in given:
            max_turns = r.integer(given["max_turns"], "sessions.max_turns", 1, 500)
        if "smoke" in given:
            smoke = r.integer(given["smoke"], "sessions.smoke", 1, 64)
    job = Job(Path(origin), base, digest, course, practice, source, fresh_count, lines, budget,
              tuple(loops), control, max_turns, smoke, fresh_sets)
    _no_controller_twice(r, job)
    return job


def _practice(r: _Reader, node: _Node | None) -> tuple[tuple[int, ...], str]:
    import plimsoll_sim as sim

    if node is None or node.value == "practice":
        return tuple(sim.PRACTICE_SEEDS), "practice"
    rel = r.relative(node, "practice")
    path = r.base / rel
    if not path.exists():  # a FIFO or a device is refused by read_bounded, below
        raise r.fail(node.line, f"practice {rel!r}: not 'practice' (the simulator's 16 seeds) "
                     "and no such seed file")
    path = r.kept_inside(node.line, rel, "practice")
    try:
        text = read_bounded(path, SEED_FILE_BYTES, f"practice {rel}").decode("utf-8")
    except BadInput as e:
        raise r.fail(node.line, str(e)) from None
    except UnicodeDecodeError:
        raise r.fail(node.line, f"practice {rel}: not UTF-8 text") from None
    seeds: list[int] = []
    for number, raw in enumerate(text.splitlines(), 1):
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        if not item.isdigit() or not 0 <= int(item) < 2**64 or len(seeds) >= MAX_FRESH:
            raise ConfigError(f"{rel} line {number}: not a seed (one integer 0..2**64-1 per "
                              f"line, at most {MAX_FRESH}); fix the practice seed file")
        seeds.append(int(item))
    if not seeds:
        raise r.fail(node.line, f"practice {rel}: no seeds in it; write one seed per line")
    if len(set(seeds)) != len(seeds):
        raise r.fail(node.line, f"practice {rel}: a seed appears twice; list each once")
    return tuple(seeds), rel


def _loop(r: _Reader, name: str, node: _Node) -> Group:
    body = r.mapping(node, f"loops.{name}", LOOP_KEYS)
    if "controller" not in body:
        raise r.fail(node.at, f"loops.{name} needs controller: (the loop's own controller)")
    build = r.integer(body["build"], f"loops.{name}.build", 1, MAX_BUILD) \
        if "build" in body else 0
    if "rebuilds" not in body and not build:
        raise r.fail(node.at, f"loops.{name} needs rebuilds: [globs] or build: N (the gap is "
                     "measured against them)")
    if build and "recipe" not in body:
        raise r.fail(body["build"].line, f"loops.{name}.build: rebuilds are made from the "
                     "loop's recipe; add recipe: (the control group is the one built without)")
    controller = r.controller(body["controller"], f"loops.{name}.controller")
    recipe = None
    if "recipe" in body:
        recipe = r.relative(body["recipe"], f"loops.{name}.recipe")
        if not (r.base / recipe).exists():  # not a regular file: refused where it is read
            raise r.fail(body["recipe"].line, f"loops.{name}.recipe {recipe}: no such file")
        r.kept_inside(body["recipe"].line, recipe, f"loops.{name}.recipe")
    rebuilds = r.globs(body["rebuilds"], f"loops.{name}.rebuilds") if "rebuilds" in body else ()
    return Group(name, controller, recipe, rebuilds, build, node.at)


def _control(r: _Reader, node: _Node) -> Group:
    if isinstance(node.value, dict):
        body = r.mapping(node, "control", CONTROL_KEYS)
        build = r.integer(body["build"], "control.build", 1, MAX_BUILD) if "build" in body else 0
        if "rebuilds" not in body and not build:
            raise r.fail(node.at, "control needs rebuilds: [globs] or build: N")
        rebuilds = r.globs(body["rebuilds"], "control") if "rebuilds" in body else ()
        return Group("control", None, None, rebuilds, build, node.at)
    return Group("control", None, None, r.globs(node, "control"), 0, node.at)


def _no_controller_twice(r: _Reader, job: Job) -> None:
    seen: dict[str, str] = {}
    count = 0
    for g in job.groups():
        for cid in ((g.controller,) if g.controller else ()) + g.rebuilds:
            count += 1
            where = f"{'loops.' + g.name if g.name != 'control' else 'control'}"
            if cid.startswith("built/"):
                raise r.fail(g.line, f"{cid}: the name built/ is kept for the controllers of "
                             "rebuilds made through a model; rename the folder")
            if cid in seen:
                raise r.fail(g.line, f"{cid} is listed in {seen[cid]} and in {where}; a "
                             "controller belongs to one group")
            seen[cid] = where
    if count > MAX_CONTROLLERS:
        raise r.fail(1, f"{count} controllers; a job grades at most {MAX_CONTROLLERS}")


def load(path: str | Path) -> Job:
    """Read and check a job file (at most `MAX_JOB_BYTES`); ConfigError (exit 2) names the file
    and line."""
    p = Path(path)
    try:
        raw = read_bounded(p, MAX_JOB_BYTES, f"job file {p}")
    except BadInput as e:
        raise ConfigError(f"{e}; pass the squeeze.yaml path") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"job file {p}: not UTF-8 text") from None
    return parse(text, str(p), p.parent, hashlib.sha256(raw).hexdigest())
