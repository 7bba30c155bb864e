"""`plimsoll-ci init`: set a harness repository up, the way its maintainer would by hand.

    plan = survey(repo)                     # what the layout suggests (values file, ship sets)
    done = apply(plan, InitOptions(...))    # plimsoll.yaml, withheld.json, key, hooks, workflow

`survey` looks and writes nothing: the likely values file (by its name and folder: `seeds`,
`heldout`, `answers`, `labels`, `truth`, `secret`, `private`), the `--select` a structured one
needs when only one path holds values, and ship sets from the folders an agent is usually handed
(`task/`, `public/`, `viewer/`, ...). `apply` writes, refusing (exit 2, nothing written) when
anything it would write is already there, except `.pre-commit-config.yaml` and `.gitignore`,
which it extends:

- `plimsoll.yaml`: the ship sets, `withheld: withheld.json`, `key: {file: KEYFILE}`;
- the HMAC key: 32 random bytes, URL-safe base64, in a file outside the repository (mode 0600,
  never overwritten: an existing key file is reused);
- `withheld.json`: the values file's digests under that key (`withheld build`'s own road);
- the values file named in `.gitignore` (the raw values must never be committed: the withheld
  guard refuses them, and the history would keep them);
- `.pre-commit-config.yaml`: this release's hooks, pinned (`rev: vX.Y.Z`);
- `.github/workflows/plimsoll-ship-scan.yml`: the ship-scan action on every commit of a pull
  request, with the key from the secret `PLIMSOLL_WITHHELD_KEY`.

Nothing here prints or returns a value or the key.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from plimsoll_ci.errors import BadInput

CONFIG = "plimsoll.yaml"
WITHHELD = "withheld.json"
WORKFLOW = ".github/workflows/plimsoll-ship-scan.yml"
PRECOMMIT = ".pre-commit-config.yaml"
HOOKS_REPO = "https://github.com/plimsoll-ci/plimsoll-ci"
KEY_SECRET = "PLIMSOLL_WITHHELD_KEY"

# Names that say "answer key" (scored by where they are found: a file's name, its folder's name).
_SECRET_WORDS = ("seed", "heldout", "held_out", "held-out", "answer", "label", "truth", "secret",
                 "private", "hidden", "solution", "gold")
_VALUE_SUFFIXES = (".txt", ".yaml", ".yml", ".json", ".toml", ".csv", "")
# Folders an agent is usually handed, most likely first.
_SHIP_FOLDERS = ("task", "tasks", "public", "ship", "sandbox", "starter", "viewer", "prompt",
                 "prompts", "agent", "workspace", "assets")
_SKIP = {".git", ".github", "node_modules", "__pycache__", ".venv", "venv", ".tox", "build",
         "dist"}
_MAX_WALK = 20_000  # files looked at by the survey (a huge repository is named by flags)


@dataclass
class Plan:
    """What `init` would write, found by `survey` and adjusted by flags or answers."""

    repo: Path
    values: Path | None = None  # relative to repo
    select: str | None = None
    ship: dict[str, list[str]] = field(default_factory=dict)  # set name -> include globs
    values_candidates: list[Path] = field(default_factory=list)
    select_candidates: list[str] = field(default_factory=list)


@dataclass
class InitOptions:
    """Where the key goes, and which optional parts are written."""

    key_file: Path
    hooks: bool = True
    workflow: bool = True


@dataclass
class Done:
    """What `apply` wrote (paths relative to the repository, the key file absolute)."""

    written: list[str]
    extended: list[str]
    key_file: Path
    key_reused: bool
    entries: int
    warnings: list[str]


def default_key_file(repo: Path) -> Path:
    """`$XDG_CONFIG_HOME/plimsoll/keys/NAME.key` (else `~/.config/...`): outside the repository,
    one per repository name."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", repo.resolve().name) or "harness"
    return base / "plimsoll" / "keys" / f"{name}.key"


def _score(rel: Path) -> int:
    if rel.suffix.lower() not in _VALUE_SUFFIXES:
        return 0
    score = 0
    for i, part in enumerate(reversed([p.lower() for p in rel.parts])):
        weight = 3 if i == 0 else 2  # the file's own name says most
        score += weight * sum(w in part for w in _SECRET_WORDS)
    return score


def _walk(repo: Path) -> list[Path]:
    out: list[Path] = []
    for top, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith("."))
        for f in sorted(files):
            p = Path(top) / f
            if p.is_symlink() or not p.is_file():
                continue
            out.append(p.relative_to(repo))
            if len(out) >= _MAX_WALK:
                return out
    return out


def survey(repo: Path) -> Plan:
    """What the layout suggests; writes nothing. BadInput when `repo` is no git work tree."""
    from plimsoll_ci import git

    repo = git.repo_root(Path(repo))
    plan = Plan(repo=repo)
    files = _walk(repo)
    scored = sorted(((s, p) for p in files if (s := _score(p)) > 0 and p.name != WITHHELD),
                    key=lambda sp: (-sp[0], len(sp[1].parts), str(sp[1])))
    plan.values_candidates = [p for _, p in scored[:8]]
    if scored and (len(scored) == 1 or scored[0][0] > scored[1][0]):
        plan.values = scored[0][1]
    top = {p.parts[0] for p in files if len(p.parts) > 1}
    secret_top = {p.parts[0] for p in plan.values_candidates if len(p.parts) > 1}
    for name in _SHIP_FOLDERS:
        if name in top and name not in secret_top:
            plan.ship[name] = [f"{name}/**"]
    if plan.values is not None:
        choose_values(plan, plan.values)
    return plan


def choose_values(plan: Plan, values: Path, select: str | None = None) -> None:
    """Take `values` (relative to the repository) as the values file, and `select` for a
    structured one; without `select`, the one path holding values, when there is only one."""
    from plimsoll_ci import valuefiles

    full = plan.repo / values
    data = valuefiles.read(str(full))
    plan.values = values
    plan.select = select
    fmt = valuefiles.structure(str(full), data)
    if fmt is None:
        if select is not None:
            raise BadInput(f"--select given for {values}, a plain file of one value a line")
        plan.select_candidates = []
        return
    tree = valuefiles.parse(data, fmt, str(values))
    valuefiles.check_bounds(tree, str(values))
    # `heldout.seeds[*] (16 numbers)` -> `heldout.seeds[*]`; a CSV column named by position only
    # in words has no expression to offer
    paths = [c.rsplit(" (", 1)[0] for c in valuefiles.candidates(tree, str(values), fmt)]
    plan.select_candidates = [p for p in paths if not p.startswith("column ")]
    if select is None and len(plan.select_candidates) == 1:
        plan.select = plan.select_candidates[0]


def missing(plan: Plan) -> list[str]:
    """What the plan still lacks, each with the flag that gives it (empty: ready to apply)."""
    out = []
    if plan.values is None:
        seen = ", ".join(str(p) for p in plan.values_candidates) or "none found"
        out.append(f"which file holds the values that must never ship: give --values FILE "
                   f"(candidates: {seen})")
    elif plan.select is None and _structured(plan):
        seen = ", ".join(plan.select_candidates) or "none"
        out.append(f"{plan.values} is structured: give --select PATH (paths: {seen})")
    if not plan.ship:
        out.append("what ships into an agent's sandbox: give --ship NAME=GLOB (for example "
                   "--ship task='task/**')")
    return out


def _structured(plan: Plan) -> bool:
    from plimsoll_ci import valuefiles

    full = plan.repo / plan.values  # type: ignore[operator]  # (asked only with values)
    return valuefiles.structure(str(full), valuefiles.read(str(full))) is not None


def _config_text(plan: Plan, key_file: Path) -> str:
    def q(s: str) -> str:  # a YAML double-quoted scalar
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    home = Path.home()
    shown = (f"~/{key_file.relative_to(home)}" if key_file.is_relative_to(home)
             else str(key_file))
    lines = ["# What this harness ships into an agent's sandbox, and what must never ride along.",
             "# Written by `plimsoll-ci init`; docs/ship-sets.md says what each key does.",
             f"withheld: {WITHHELD}   # digests only (keyed): no value is in it",
             f"key: {{file: {q(shown)}}}   # outside the repository; CI passes the secret "
             f"{KEY_SECRET}",
             "ship:"]
    for name, globs in plan.ship.items():
        lines.append(f"  {name}:")
        lines.append("    include: [" + ", ".join(q(g) for g in globs) + "]")
    return "\n".join(lines) + "\n"


def _precommit_block(version: str, indent: str = "  ") -> str:
    """This release's two hooks as one item of `repos:`, at the list's own indentation."""
    return (f"{indent}- repo: {HOOKS_REPO}\n"
            f"{indent}  rev: v{version}\n"
            f"{indent}  hooks:\n"
            f"{indent}    - id: plimsoll-ship-scan\n"
            f"{indent}    - id: plimsoll-withheld-guard\n")


def _workflow_text(version: str) -> str:
    return f"""# Fail a pull request or push that would put a withheld value into an agent's sandbox:
# every commit is scanned, not only the tip. Written by `plimsoll-ci init`.
# Needs the repository secret {KEY_SECRET} (the key in the file plimsoll.yaml names).
name: ship scan

on:
  pull_request:
  push:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  ship-scan:
    runs-on: ubuntu-latest
    timeout-minutes: 15
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # each-commit needs the history of the range
      - uses: plimsoll-ci/plimsoll-ci/actions/ship-scan@v{version}
        with:
          mode: each-commit
          key: ${{{{ secrets.{KEY_SECRET} }}}}
"""


def _key(key_file: Path, repo: Path) -> tuple[bytes, bool]:
    """The key in `key_file`, made (0600, never overwritten) when the file is not there."""
    from plimsoll_ci.withheld import key_from

    full = key_file.expanduser().absolute()
    if full.resolve().is_relative_to(repo.resolve()):
        raise BadInput(f"--key-file {key_file}: inside the repository; a key kept beside the "
                       "digests protects nothing. Give a path outside it")
    if full.exists():
        return key_from(file=str(full)) or b"", True
    full.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=")
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(text + b"\n")
    return text, False


def _refuse_existing(plan: Plan, options: InitOptions) -> None:
    there = [p for p in (CONFIG, WITHHELD) if (plan.repo / p).exists()]
    if options.workflow and (plan.repo / WORKFLOW).exists():
        there.append(WORKFLOW)
    if there:
        raise BadInput(f"init: {', '.join(there)} already there in {plan.repo}; nothing written "
                       "(move them away to start again, or edit them by hand)")
    pc = plan.repo / PRECOMMIT
    if options.hooks and pc.exists():
        text = pc.read_text(errors="replace")
        if not re.search(r"(?m)^repos:[ \t]*\n", text):
            raise BadInput(f"init: {PRECOMMIT} has no block-style `repos:` list to add the hooks "
                           "to; nothing written (add them by hand, docs/pre-commit.md)")


def apply(plan: Plan, options: InitOptions) -> Done:
    """Write what the plan says (see the module doc); BadInput and nothing written when the plan
    lacks something (`missing`) or a file it would create is already there."""
    from plimsoll_ci import __version__
    from plimsoll_ci.grading.seedlint import value_warnings
    from plimsoll_ci.withheld import build_set, dumps, read_values

    lacking = missing(plan)
    if lacking:
        raise BadInput("init: nothing written; still needed:\n  " + "\n  ".join(lacking))
    _refuse_existing(plan, options)
    assert plan.values is not None
    values = read_values(str(plan.repo / plan.values), id_prefix=plan.values.as_posix(),
                         select=plan.select)
    if not values:
        raise BadInput(f"init: {plan.values} holds no values (empty, or only comments); "
                       "nothing written")
    key, reused = _key(options.key_file, plan.repo)
    doc, warnings = build_set(values, key=key)
    warnings += value_warnings(values)
    written: list[str] = []
    extended: list[str] = []

    def write(rel: str, text: str) -> None:
        p = plan.repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        written.append(rel)

    write(WITHHELD, dumps(doc))
    write(CONFIG, _config_text(plan, options.key_file.expanduser().absolute()))
    if _ignore(plan.repo, plan.values):
        extended.append(".gitignore")
    if options.hooks:
        pc = plan.repo / PRECOMMIT
        if pc.exists():
            text = pc.read_text()
            if HOOKS_REPO not in text:
                at = re.search(r"(?m)^repos:[ \t]*\n", text)
                assert at is not None  # _refuse_existing checked it
                item = re.search(r"(?m)^([ \t]*)- ", text[at.end():])
                block = _precommit_block(__version__, item.group(1) if item else "  ")
                pc.write_text(text[:at.end()] + block + text[at.end():])
                extended.append(PRECOMMIT)
        else:
            write(PRECOMMIT, "repos:\n" + _precommit_block(__version__))
    if options.workflow:
        write(WORKFLOW, _workflow_text(__version__))
    return Done(written, extended, options.key_file.expanduser().absolute(), reused,
                len(doc["entries"]), warnings)


def _ignore(repo: Path, values: Path) -> bool:
    """Name the raw values file in `.gitignore` (True when it was added)."""
    gi = repo / ".gitignore"
    line = "/" + values.as_posix()
    text = gi.read_text() if gi.exists() else ""
    if line in text.splitlines():
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    gi.write_text(f"{text}{sep}# the raw values plimsoll-ci withholds: never commit them\n"
                  f"{line}\n")
    return True
