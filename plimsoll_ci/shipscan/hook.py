"""pre-commit entry points: the ship scan of what is being committed or pushed, and the guard.

`ship_scan(filenames, cwd)` (hook `plimsoll-ship-scan`):
- pre-commit stage: scans the *staged* version of every ship set (the git index, never the working
  tree), when one of `filenames` is shipped, is the config, the withheld set, or an input of a
  command set. Called with no filenames (by hand, or `pre-commit run --all-files` on an empty
  list) it scans everything. A ship set that ships nothing is an error: the hook never passes by
  scanning nothing.
- pre-push stage (pre-commit sets `PRE_COMMIT_FROM_REF` / `PRE_COMMIT_TO_REF`): scans the tree of
  every commit in `FROM..TO`, merges included, each with its own `plimsoll.yaml` when it has one.
  A first push that includes the root commit comes without FROM: then every commit of
  `PRE_COMMIT_LOCAL_BRANCH` that no ref of `PRE_COMMIT_REMOTE_NAME` has.
- `scan_commits(repo, commits, config_path, set_name, key)` is the same walk for the action.
Every scan goes through the one front end (`scan.ShipScan`, via `scan_files`).

`withheld_guard(filenames, cwd)` (hook `plimsoll-withheld-guard`) refuses:
- a withheld set that is unkeyed and holds value entries (a guessable seed hashed with plain SHA-256
  is brute-forced in minutes: key it);
- a file whose lines are the values a withheld set was built from (the seeds file itself), and
  a file, plain or YAML/JSON/TOML/CSV (by name or content), holding at least half of a set's
  distinct values: a copy of the seeds in another shape (message: the file and the share, never
  a value). Structured files up to `GUARD_STRUCTURED_BOUND` are parsed for their values (by
  content only for a `.txt` or a name without an extension: a staged Markdown or source file
  is not parsed as YAML on every commit).

Warm runs are fast because content and names already judged clean are remembered under the git
folder (`plimsoll/clean-*`, a `scan.VerdictCache`), keyed by git blob id (computed for builder
output; the shipped path for a name) with the content's size, in a file named by the withheld
set's digest, the limits and the engine's version; a finding or a note is never cached, so a
cached run reports exactly what a fresh run would, bytes scanned included. The staged config's
parse is remembered by content in the user's cache (`configmemo`); the engine imports no numpy,
with its compiled part or without it. A pre-commit run collects no cycles while it
runs (`pool.collector_paused`), and the program ends once a hook's output is out (the command's
`QUICK_EXIT`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from plimsoll_ci import __version__, git, withheld
from plimsoll_ci.errors import BadInput
from plimsoll_ci.match.canonical import classify
from plimsoll_ci.match.canonical import digest as value_digest
from plimsoll_ci.pool import collector_paused
from plimsoll_ci.shipscan import baseline, configmemo, scan, ship
from plimsoll_ci.shipscan.baseline import Baseline
from plimsoll_ci.shipscan.results import ScanResult, Verdict, decide_mode
from plimsoll_ci.shipscan.scan import Limits, ShipScan, make_limits
from plimsoll_ci.withheld import GUESSABLE_BITS, shape_bits

# --------------------------------------------------------------------------- clean-content cache


class CleanCache:
    """A `scan.VerdictCache` that keeps clean verdicts only (key and size, one a line), for one
    (withheld set, limits, engine) combination; a finding or a note is never remembered."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.sizes: dict[str, int] = {}
        self.new = False
        self._clean: dict[int, Verdict] = {}  # one clean verdict per size, shared (a record)
        if path is not None:
            try:
                for line in path.read_text(encoding="ascii").splitlines():
                    key, _, size = line.partition(" ")
                    self.sizes[key] = int(size)
            except (OSError, UnicodeDecodeError, ValueError):
                self.sizes = {}

    def get(self, key: str) -> Verdict | None:
        """A clean verdict of the content's size when `key` was judged clean."""
        size = self.sizes.get(key)
        if size is None:
            return None
        verdict = self._clean.get(size)
        if verdict is None:
            verdict = self._clean[size] = Verdict((), (), size)
        return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        """Remember `key` when its verdict is clean."""
        if verdict.clean and not verdict.tokens and key not in self.sizes:
            self.sizes[key] = verdict.size
            self.new = True

    def save(self) -> None:
        """Write the cache atomically; a failure to write only costs speed next time."""
        if self.path is None or not self.new:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text("".join(f"{k} {n}\n" for k, n in sorted(self.sizes.items())),
                           encoding="ascii")
            os.replace(tmp, self.path)
            configmemo.prune(self.path.parent, "clean-*", keep=4)
        except OSError:
            pass


def _scanner_version() -> str:
    """Changes whenever the scanning code does, so an upgrade never trusts an old verdict."""
    parts = [__version__]
    for p in scan.engine_files():
        try:
            st = p.stat()
            parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(p.name)
    return "|".join(parts)


_GIT_DIRS: dict[Path, Path | None] = {}  # repository top -> its common git folder


def git_dir(repo: Path) -> Path | None:
    """The repository's (common) git folder, where the hook keeps its caches."""
    if repo not in _GIT_DIRS:
        _GIT_DIRS[repo] = git.common_dir(repo)
    return _GIT_DIRS[repo]


def locate(cwd: Path) -> Path:
    """The top folder of the repository containing `cwd` (its git folder remembered for
    `git_dir`: one `git rev-parse` for both); `BadInput` outside git."""
    found = git.locate(cwd)
    if found is None:
        return git.repo_root(cwd)  # says why
    repo, gd = found
    _GIT_DIRS.setdefault(repo, gd)
    return repo


def open_cache(repo: Path | None, wset: Any, limits: Limits) -> CleanCache:
    """The clean-content cache for this withheld set and these limits under the git folder."""
    gd = git_dir(repo) if repo is not None else None
    if gd is None:
        return CleanCache(None)
    tag = hashlib.sha256(json.dumps([str(getattr(wset, "digest", "")), list(limits),
                                     _scanner_version()]).encode())
    return CleanCache(gd / "plimsoll" / f"clean-{tag.hexdigest()[:32]}")


def staged_config(repo: Path, path: Path, entries: Sequence[git.FileEntry] | None = None
                  ) -> ship.Config:
    """`ship.config_at(repo, path, ":")`, remembered by content (`configmemo.staged_config`;
    the git folder holds the memo when the user's cache cannot)."""
    gd = git_dir(repo)
    return configmemo.staged_config(repo, path, entries, gd / "plimsoll" if gd else None)


# --------------------------------------------------------------------------- scanning


def scan_files(repo: Path, files: Sequence[ship.ShippedFile], config: ship.Config, wset: Any,
               cache: CleanCache | None = None) -> ScanResult:
    """Ship-scan what a config's sets ship (`ship.from_index`/`from_rev`, read or not) through
    the one front end: the config's limits and mode, blobs read from `repo` only when `cache`
    does not already know them clean."""
    session = ShipScan(wset, make_limits(config.limits, str(config.path)), cache,
                       decide_mode(config.mode, wset.mode),
                       read=functools.partial(git.read_blobs, repo))
    for n in wset.notes:  # a key given for an unkeyed set: said in the report
        session.note(n)
    return session.scan(ship.items(files))


def load_set(config: ship.Config, key: bytes | None = None) -> Any:
    """The config's withheld set; BadInput when it has no entries (a set that withholds nothing
    passes every scan, and the hook never passes by scanning against nothing)."""
    wset = ship.load_withheld(config, key=key)
    if not wset.entries:
        raise BadInput(f"withheld set {wset.origin} has no entries: it withholds nothing, so "
                       "the scan would pass whatever ships; rebuild it from your values "
                       "(plimsoll-ci withheld build, see docs/withheld-sets.md)")
    return wset


# --------------------------------------------------------------------------- ship-scan hook


def _relevant(filenames: Sequence[str], config: ship.Config, repo: Path) -> bool:
    """Whether any changed file can change what ships (or what counts as withheld)."""
    if not filenames:
        return True  # by hand or an empty --all-files list: scan everything
    prefix = ship.config_prefix(config, repo)
    watched = {config.path.resolve()}
    if config.withheld is not None:
        watched.add(config.withheld.resolve())
    rels = []
    for name in filenames:
        if (repo / name).resolve() in watched:
            return True
        rels.append(Path(name).as_posix())
    for s in config.ship.values():
        if s.command is not None:
            if not s.inputs or ship.select_repo_paths(rels, ship.inputs_set(s), prefix):
                return True
        elif ship.select_repo_paths(rels, s, prefix):
            return True
    return False


def _config(config_path: str | None, repo: Path, rev: str | None,
            entries: Sequence[git.FileEntry] | None = None) -> ship.Config:
    if config_path is not None:
        p = Path(config_path)
        return ship.load_config(p if p.is_absolute() else repo / p)
    found = repo / ship.CONFIG_NAME
    if not found.is_file():
        raise BadInput(f"{repo}: no {ship.CONFIG_NAME} at the repository root; create one "
                       "(see docs/ship-sets.md) or pass --config")
    if rev == ":":
        return staged_config(repo, found, entries)
    return ship.config_at(repo, found, rev)


def push_range(env: dict[str, str] | None = None) -> tuple[str | None, str | None]:
    """(from, to) of a pre-push run as pre-commit passes them (None, None otherwise)."""
    env = dict(os.environ if env is None else env)
    to = env.get("PRE_COMMIT_TO_REF") or env.get("PRE_COMMIT_SOURCE")
    frm = env.get("PRE_COMMIT_FROM_REF") or env.get("PRE_COMMIT_ORIGIN")
    if not to:
        return None, None
    return (frm if frm and frm != git.ZERO_OID else None), to


def scan_commits(repo: Path, commits: Sequence[str], config_path: str | None,
                 set_name: str | None = None, key: bytes | None = None,
                 known: Baseline | None = None) -> list[tuple[str, ScanResult]]:
    """Scan the ship sets of each commit, each by its own config -> [(commit, ScanResult)],
    sharing one clean-content cache per withheld set; findings of the baseline `known` are
    taken out (`baseline.apply_each`)."""
    results = []
    wsets: dict[tuple, tuple[Any, CleanCache]] = {}
    for commit in commits:
        config = _config(config_path, repo, commit)
        files = ship.from_rev(repo, commit, config, set_name, read=False)
        ship.check_not_empty(config, files, f"commit {commit[:12]}", set_name)
        which = (config.withheld, config.key_env, config.key_file,
                 tuple(sorted(config.limits.items())))
        if which not in wsets:
            wset = load_set(config, key=key)
            limits = make_limits(config.limits, str(config.path))
            wsets[which] = (wset, open_cache(repo, wset, limits))
        wset, cache = wsets[which]
        results.append((commit, scan_files(repo, files, config, wset, cache), wset))
    for _, cache in wsets.values():
        cache.save()
    return baseline.apply_each(results, known)


def ship_scan(filenames: Sequence[str], cwd: Path, config_path: str | None = None,
              out: IO[str] | None = None, env: dict[str, str] | None = None,
              baseline_path: str | None = None) -> int:
    """The `plimsoll-ship-scan` hook; returns the exit code (0 pass, 1 refused, 2 bad input).
    Findings of the baseline at `baseline_path` (relative to `cwd`) are not counted."""
    out = out or sys.stdout
    repo = locate(Path(cwd))
    known = baseline.load(Path(cwd) / baseline_path, baseline_path) if baseline_path else None
    frm, to = push_range(env)
    if to is not None:
        return _push(repo, git.commits_between(repo, frm, to), config_path, out, known)
    first_push = new_commits(repo, env)
    if first_push is not None:
        return _push(repo, first_push, config_path, out, known)
    with collector_paused():
        return _staged(repo, filenames, config_path, out, known)


def _staged(repo: Path, filenames: Sequence[str], config_path: str | None, out: IO[str],
            known: Baseline | None = None) -> int:
    """The pre-commit run: the staged ship sets when one of `filenames` can change them."""
    entries = git.index_entries(repo)  # listed once: the staged config's id and what ships
    config = _config(config_path, repo, ":", entries)
    if not _relevant(filenames, config, repo):
        return 0
    files = ship.from_index(repo, config, read=False, entries=entries)
    ship.check_not_empty(config, files, "the index")
    wset = load_set(config)
    cache = open_cache(repo, wset, make_limits(config.limits, str(config.path)))
    result = baseline.apply(scan_files(repo, files, config, wset, cache), known, wset)
    cache.save()
    code = _report(result, "staged", out)
    if result.refused:
        from plimsoll_ci.shipscan import report

        out.write(report.STAGE_ADVICE["commit"] + "\n")
    return code


def _report(result: ScanResult, where: str, out: IO[str]) -> int:
    """Print a hook run's report and verdict; the exit code (1 refused, else 0). What to do
    next is the caller's to say, once, for its stage. The report's modules are imported only
    here, when there is something to say: a clean run never loads them."""
    if result.findings or result.notes:
        from plimsoll_ci.shipscan import report

        out.write(report.render(result, "text", stage=None).rstrip("\n") + "\n")
    if result.findings:
        verdict = "refused" if result.refused else "allowed: mode is warn in the config"
        out.write(f"plimsoll ship scan ({where}): {verdict}.\n")
    return 1 if result.refused else 0


def new_commits(repo: Path, env: dict[str, str] | None = None) -> list[str] | None:
    """On a pre-push that pre-commit runs with all files (a push that includes a root commit, so
    there is no FROM ref), every commit of the pushed ref that no ref of the remote has; None
    when this is not such a push.
    """
    env = dict(os.environ if env is None else env)
    local, remote = env.get("PRE_COMMIT_LOCAL_BRANCH"), env.get("PRE_COMMIT_REMOTE_NAME")
    if not local or not remote or local.startswith("-") or remote.startswith("-"):
        return None
    return git.commits_not_on(repo, local, remote)


def _push(repo: Path, commits: Sequence[str], config_path: str | None, out: IO[str],
          known: Baseline | None = None) -> int:
    from plimsoll_ci.shipscan import report

    code = 0
    for commit, result in scan_commits(repo, commits, config_path, known=known):
        if result.findings or result.notes:
            out.write(f"commit {commit[:12]} {report.shown(git.subject(repo, commit))}\n")
        code = max(code, _report(result, f"commit {commit[:12]}", out))
    if code:
        out.write(report.STAGE_ADVICE["push"] + "\n")
    return code


# --------------------------------------------------------------------------- withheld guard


def staged_contents(repo: Path, names: Sequence[str]) -> dict[str, bytes]:
    """The staged bytes of each named file (one `git ls-files` and one `git cat-file --batch`);
    a file that is not in the index is read from disk, one that is in neither is left out.
    """
    staged = {e.path: e for e in git.index_entries(repo) if e.mode != git.MODE_SUBMODULE}
    wanted = [n for n in names if n in staged]
    blobs = git.read_blobs(repo, [staged[n].oid for n in wanted])
    out = {n: blobs[staged[n].oid] for n in wanted}
    for n in names:
        if n not in out:
            try:
                out[n] = (repo / n).read_bytes() if (repo / n).is_file() else b""
            except OSError:
                continue
    return out


def _as_withheld_doc(data: bytes) -> dict | None:
    if not data.lstrip().startswith(b"{") or len(data) > 64 * 1024 * 1024:
        return None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the parser: not a set
        return None
    if not isinstance(doc, dict):
        return None
    tag = str(doc.get("format", ""))
    return doc if tag.startswith(("plimsoll-withheld/", "plimsoll-sealed/")) else None


def _guessable_unkeyed(doc: dict) -> list[str]:
    """Ids of value entries a brute force can recover: unkeyed, under `GUESSABLE_BITS` by the
    one entropy estimate (`withheld.shape_bits`, from the shape stored beside each digest)."""
    if doc.get("scheme") != "sha256":
        return []
    ids = []
    entries = doc.get("entries")
    for e in entries if isinstance(entries, list) else []:  # (any JSON: a staged file)
        if not isinstance(e, dict) or e.get("kind") != "value":
            continue
        shape = e.get("shape")
        if not isinstance(shape, dict):
            shape = {}
        try:
            bits = shape_bits(str(e.get("type")), shape)
        except (TypeError, ValueError):
            bits = 0.0
        if bits < GUESSABLE_BITS:
            ids.append(str(e.get("id", "?")))
    return ids


def _value_digests(wset: Any) -> set[str]:
    """The digests of a set's value entries (what a line that *is* a value hashes to)."""
    return {e.digest for e in wset.entries if e.kind == "value"}


def _line_is_value(line: str, digests: set[str], key: bytes | None) -> str | None:
    """The digest of `line` when the whole line is one value of the set (surrounding quotes, a
    trailing comma and a leading `- ` allowed, as in a list), else None. A line that merely
    *contains* a value (a link in an HTML file) is the ship scan's business, not the guard's."""
    text = line.strip()
    if text.startswith("- "):  # an item of a YAML or Markdown list
        text = text[2:].strip()
    text = text.rstrip(",;").strip("\"'")
    if not text or len(text) > 256:
        return None
    vtype, canon = classify(text)
    if not canon:
        return None
    d = value_digest(vtype, canon, key).hex()
    return d if d in digests else None


# A staged YAML/JSON/TOML/CSV file up to this size is parsed for its values: 10,000 seeds in YAML
# take 170 KiB and a quarter of a second; PyYAML spends seconds on a MiB of flow mappings.
GUARD_STRUCTURED_BOUND = 256 * 1024


def _covers(hits: int, total: int) -> bool:
    """Whether a file holding `hits` of a set's `total` distinct values is a copy of its values
    file: at least half of them (two or more, unless the set holds one)."""
    return total > 0 and hits * 2 >= total and (hits >= 2 or total == 1)


def guard_findings(contents: dict[str, bytes], wsets: Iterable[tuple[str, Any]]) -> list[str]:
    """Problems the guard refuses among `contents` (name -> staged bytes), one message per file,
    never a value: an unkeyed guessable set; a file whose lines are a set's values; a file,
    plain or structured (YAML, JSON, TOML, CSV, by name or content), holding at least half of a
    set's values (`_covers`).
    """
    from plimsoll_ci import valuefiles
    from plimsoll_ci.shipscan import report

    problems = []
    sets = [(origin, _value_digests(w), w.key) for origin, w in wsets
            if w.key is not None or not w.keyed]
    for name, data in contents.items():
        shown_name = report.shown(name)
        doc = _as_withheld_doc(data)
        if doc is not None:
            weak = _guessable_unkeyed(doc)
            if weak:
                listed = ", ".join(report.shown(w) for w in weak[:5]) + \
                    (f" and {len(weak) - 5} more" if len(weak) > 5 else "")
                problems.append(
                    f"{shown_name}: an unkeyed withheld set with {len(weak)} guessable value(s) "
                    f"({listed}); plain SHA-256 of a seed is brute-forced in minutes. Rebuild it "
                    "keyed: plimsoll-ci withheld build --key-env VAR ... (see docs/pre-commit.md)")
            continue
        if len(data) > 4 * 1024 * 1024 or b"\0" in data[:8192]:
            continue
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("#")]
        if not lines or not any(digests for _, digests, _ in sets):
            continue
        fmt, structured = (valuefiles.scalars(name, data)
                           if len(data) <= GUARD_STRUCTURED_BOUND else None) or ("", None)
        for origin, digests, key in sets:
            found = _copy_of_values(shown_name, lines, structured, fmt.upper(),
                                    (report.shown(origin), digests, key))
            if found is not None:
                problems.append(found)
                break
    return problems


_KEEP_IT_OUT = ("Keep it outside the repository (or in a private store) and commit only the "
                "keyed withheld set")


def _copy_of_values(shown_name: str, lines: Sequence[str], structured: Sequence[str] | None,
                    kind: str, the_set: tuple[str, set[str], bytes | None]) -> str | None:
    """Why a file is a copy of the values of `the_set` (its shown name, value digests and key),
    or None: its numbers and strings (a structured file of `kind`) or its lines hold at least
    half of the set's distinct values (`_covers`), or its lines are values (all of them, or
    half and two or more). Counts and names only, never a value."""
    origin, digests, key = the_set
    if not digests:
        return None

    def holding(what: str, hits: set[str]) -> str:
        return (f"{shown_name}: {what} holding {len(hits)} of the {len(digests)} values of the "
                f"withheld set {origin} ({100 * len(hits) // len(digests)}%); this looks like a "
                f"copy of the values the set was built from. {_KEEP_IT_OUT}")

    if structured is not None:
        hits = {d for v in dict.fromkeys(structured)
                if (d := _line_is_value(v, digests, key)) is not None}
        if _covers(len(hits), len(digests)):
            return holding(f"a {kind} file", hits)
    hits = set()
    n = 0
    for i, ln in enumerate(lines):
        d = _line_is_value(ln, digests, key)
        if d is not None:
            n += 1
            hits.add(d)
        if i > 200 and n == 0:
            break
    if n and (n == len(lines) or (n >= 2 and n * 2 >= len(lines))):
        return (f"{shown_name}: {n} of its {len(lines)} lines are values of the withheld set "
                f"{origin} ({len(hits)} entries); this looks like the file the set was built "
                f"from. {_KEEP_IT_OUT}")
    return holding("a file", hits) if _covers(len(hits), len(digests)) else None


def withheld_guard(filenames: Sequence[str], cwd: Path, config_path: str | None = None,
                   out: IO[str] | None = None) -> int:
    """The `plimsoll-withheld-guard` hook; 0 pass, 1 refused, 2 bad input."""
    out = out or sys.stdout
    repo = git.repo_root(Path(cwd))
    wsets: list[tuple[str, Any]] = []
    config = None
    if config_path is not None or ship.find_config(repo) is not None:
        config = _config(config_path, repo, ":")
    if config is not None and config.withheld is not None and config.withheld.is_file():
        wsets.append((_shown(config.withheld, repo), ship.load_withheld(config)))
    if not filenames:
        filenames = git.tracked_files(repo)
    # Sets being committed now count too (the seeds file may arrive in the same commit).
    key = ship.load_key(config) if config is not None else None
    configured = config.withheld if config is not None else None
    contents = staged_contents(repo, filenames)
    for name, data in contents.items():
        doc = _as_withheld_doc(data)
        if doc is None or (configured is not None and (repo / name).resolve() == configured):
            continue
        try:
            wsets.append((name, withheld.parse(doc, key=key, origin=name)))
        except BadInput:
            continue  # keyed under a key we do not have: its own guard line still applies
    problems = guard_findings(contents, wsets)
    for p in problems:
        out.write(p + "\n")
    return 1 if problems else 0


def _shown(path: Path, repo: Path) -> str:
    try:
        return path.resolve().relative_to(repo).as_posix()
    except ValueError:
        return str(path)
