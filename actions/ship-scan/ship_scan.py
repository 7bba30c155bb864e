"""The ship-scan action's step: scan the tip or every commit of a pull request, report, decide.

Reads its inputs from `INPUT_*` variables (set by action.yml from `${{ inputs.* }}`, never pasted
into the script, so an input cannot inject shell), and GitHub's own `GITHUB_*` variables:
GITHUB_WORKSPACE (the checkout), GITHUB_EVENT_NAME / GITHUB_EVENT_PATH (the pull request or push
range), GITHUB_OUTPUT (outputs), GITHUB_STEP_SUMMARY (the Markdown job summary), RUNNER_TEMP.

Exit codes: 0 pass, 1 failed by `fail-on`, 2 bad input (config, key, a range start that is not
in the clone), or a builder's own exit code when it fails. An ordinary event never exits 2: a new
branch, a force-push, a deleted branch and events without a range (workflow_dispatch, schedule)
each scan what they can (see `_range`) and say so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NamedTuple


def _out(name: str, value: str) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{name}={value}\n")


def _summary(text: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text.rstrip("\n") + "\n")


def _data(value: str) -> str:
    """Workflow-command escaping of a message."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(value: str) -> str:
    """Workflow-command escaping of a property value (file=..., title=...)."""
    return _data(value).replace(":", "%3A").replace(",", "%2C")


BOUND = 200  # commits scanned when a push's own commits cannot be told apart from the rest
ZERO = "0" * 40


class Range(NamedTuple):
    """The commits to scan, oldest first, and how they were chosen (a sentence, or '')."""

    commits: list[str]
    note: str


def _event() -> tuple[str, dict]:
    name = os.environ.get("GITHUB_EVENT_NAME", "")
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return name, {}
    with open(path, encoding="utf-8") as fh:
        event = json.load(fh)
    return name, event if isinstance(event, dict) else {}


def _range(repo: Path, base: str, head: str) -> Range:
    """The commits `each-commit` scans for this event (see docs/github-action.md):

    - the `base` input, or a pull request: every commit of base..head;
    - a push: before..after; a new branch (before all zeros): its commits that are not on the
      default branch (the repository's last BOUND commits when there is none to compare with,
      e.g. the default branch's first push); a force-push (before not in the clone): from the
      merge base with the default branch; a deleted branch: nothing;
    - any other event (workflow_dispatch, schedule, ...): the tip.
    """
    from plimsoll_ci import git
    from plimsoll_ci.errors import BadInput

    name, event = _event()
    if base:
        _fetchable(repo, base)
        return Range(git.commits_between(repo, base, head or "HEAD"), "")
    if name.startswith("pull_request") or "pull_request" in event:
        pr = event.get("pull_request") or {}
        start = (pr.get("base") or {}).get("sha")
        if not start:
            raise BadInput("mode each-commit: the pull_request event has no base commit; pass "
                           "the base input, or use mode: tip")
        _fetchable(repo, start)
        return Range(git.commits_between(repo, start, head or (pr.get("head") or {}).get("sha")
                                         or "HEAD"), "")
    if name == "push" or ("before" in event and "after" in event):
        return _push_range(repo, event, head)
    what = f"event {name}" if name else "no pull_request or push event"
    return Range([git.resolve_rev(repo, head or "HEAD")],
                 f"{what} has no commit range: scanned the tip")


def _push_range(repo: Path, event: dict, head: str) -> Range:
    from plimsoll_ci import git

    after = head or event.get("after") or "HEAD"
    ref = str(event.get("ref") or "")
    if event.get("deleted") or after == ZERO:
        return Range([], f"the push deleted {ref or 'a ref'}: nothing to scan")
    after = git.resolve_rev(repo, after)
    before = str(event.get("before") or ZERO)
    default = (event.get("repository") or {}).get("default_branch") or ""
    main = _default_tip(repo, default)
    pushes_default = bool(default) and ref == f"refs/heads/{default}"
    if set(before) == {"0"}:
        if pushes_default:
            return _bounded(repo, after, f"the first push of {default}")
        if main is None:
            return _bounded(repo, after, f"new {ref or 'ref'} and no default branch in this "
                                         "clone to compare with")
        own = _rev_list(repo, after, "--not", main)
        if not own:
            return Range([after], f"new {ref or 'branch'} at a commit already on {default}: "
                                  "scanned its tip")
        return Range(own, f"new {ref or 'branch'}: its {len(own)} commit(s) not on {default}")
    if not git.has_commit(repo, before):
        if git.is_shallow(repo):
            return _bounded(repo, after, f"{before[:12]} (before the push) is not in this "
                                         "shallow clone; check out with fetch-depth: 0")
        gone = f"{before[:12]} (before the push) is not in this clone, a force-push"
        if main is None or pushes_default:
            return _bounded(repo, after, gone)
        fork = git.output(repo, "merge-base", after, main).decode().strip()
        if fork == after:
            return Range([after], f"{gone}; the new tip is on {default}: scanned the tip")
        return Range(git.commits_between(repo, fork, after),
                     f"{gone}: scanned from the merge base {fork[:12]} with {default}")
    return Range(git.commits_between(repo, before, after), "")


def _default_tip(repo: Path, default: str) -> str | None:
    """The commit of the default branch in this clone (its remote-tracking ref first)."""
    from plimsoll_ci import git

    if not default:
        return None
    for ref in (f"refs/remotes/origin/{default}", f"refs/heads/{default}"):
        if git.has_commit(repo, ref):
            return git.resolve_rev(repo, ref)
    return None


def _rev_list(repo: Path, *args: str) -> list[str]:
    from plimsoll_ci import git

    return git.output(repo, "rev-list", "--reverse", "--topo-order", *args).decode().split()


def _bounded(repo: Path, after: str, why: str) -> Range:
    commits = _rev_list(repo, f"--max-count={BOUND}", after)
    cut = " (the bound: older ones were not scanned)" if len(commits) == BOUND else ""
    return Range(commits, f"{why}: scanned the repository's last {len(commits)} "
                          f"commit(s){cut}")


def _without_config(repo: Path, commits: list[str]) -> tuple[list[str], list[str]]:
    """(commits that have plimsoll.yaml at the root, commits that do not)."""
    from plimsoll_ci import git

    have, lack = [], []
    for c in commits:
        ok = git.run(repo, "cat-file", "-e", f"{c}:plimsoll.yaml", check=False).returncode == 0
        (have if ok else lack).append(c)
    return have, lack


def main() -> int:
    """Run the scan as the action's inputs ask; returns the step's exit code."""
    # The key leaves the environment at once: builders run from here must never see it.
    key_text = os.environ.pop("INPUT_KEY", "")
    if key_text:
        print(f"::add-mask::{key_text}")

    from plimsoll_ci import git
    from plimsoll_ci.errors import PlimsollError
    from plimsoll_ci.shipscan import hook

    inputs = {k: os.environ.get(f"INPUT_{k}", "").strip()
              for k in ("CONFIG", "SHIP_SET", "FORMAT", "FAIL_ON", "MODE", "BASE", "HEAD",
                        "SARIF_FILE", "BASELINE")}
    fmt = inputs["FORMAT"] or "text"
    fail_on = inputs["FAIL_ON"] or "auto"
    mode = inputs["MODE"] or "tip"
    workspace = Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())
    temp = Path(os.environ.get("RUNNER_TEMP") or "/tmp")
    sarif_path = Path(inputs["SARIF_FILE"] or temp / "plimsoll-ship-scan.sarif")
    try:
        if fmt not in ("text", "json", "sarif", "markdown"):
            raise PlimsollError(f"input format: {fmt!r}; use text, json, sarif or markdown")
        if fail_on not in ("auto", "findings", "notes", "never"):
            raise PlimsollError(f"input fail-on: {fail_on!r}; use auto, findings, notes or never")
        if mode not in ("tip", "each-commit"):
            raise PlimsollError(f"input mode: {mode!r}; use tip or each-commit")
        repo = git.repo_root(workspace)
        known = _baseline(workspace, inputs["BASELINE"])
        notes = []
        if mode == "tip":
            commits = [git.resolve_rev(repo, inputs["HEAD"] or "HEAD")]
        else:
            chosen = _range(repo, inputs["BASE"], inputs["HEAD"])
            commits = chosen.commits
            notes += [chosen.note] if chosen.note else []
            if chosen.note and not inputs["CONFIG"]:
                # a range this step chose itself may reach back before the harness had a config
                commits, lack = _without_config(repo, commits)
                if lack:
                    notes.append(f"{len(lack)} commit(s) without plimsoll.yaml skipped (the "
                                 "oldest scanned is the first with one)")
        for note in notes:
            print(f"plimsoll ship scan: {note}")
        key = key_text.encode("utf-8") if key_text else None
        results = hook.scan_commits(repo, commits, inputs["CONFIG"] or None,
                                    inputs["SHIP_SET"] or None, key=key, known=known)
    except PlimsollError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"::error title=plimsoll ship scan::{_data(first)}")
        print(f"plimsoll ship scan: error: {e}", file=sys.stderr)
        _out("findings", "")
        _out("commits", "0")
        _summary(f"## plimsoll ship scan\n\n:x: error: {first}\n")
        return e.exit_code

    from plimsoll_ci.shipscan import report
    from plimsoll_ci.shipscan.results import combine

    if not results:
        _out("findings", "0")
        _out("commits", "0")
        _summary("## plimsoll ship scan\n\nNothing to scan: " + "; ".join(notes) + "\n")
        return 0
    # One result for the run: each commit's findings once, named by the commit that first shipped
    # them; the mode (hence SARIF levels, annotations and `fail-on: auto`) is the scans' own.
    combined = combine([(f"commit {c[:12]}" if mode == "each-commit" else "", r)
                        for c, r in results])
    print(report.render(combined, fmt))
    sarif_path.parent.mkdir(parents=True, exist_ok=True)
    sarif_path.write_text(report.render(combined, "sarif"), encoding="utf-8")
    annotation = report.level(combined)
    for f in combined.findings:
        if ":" in f.path.split("/")[0]:
            continue  # builder output: no file in the repository to annotate
        line = f",line={f.line}" if f.line else ""
        print(f"::{annotation} file={_prop(f.path)}{line},title=withheld value ships::"
              f"{_data(f'entry {f.entry} ({f.kind}, {f.where})')}")

    _out("findings", str(len(combined.findings)))
    _out("sarif", str(sarif_path))
    _out("commits", str(len(commits)))
    per_commit = [(c, len(r.findings), len(r.notes)) for c, r in results]
    _summary(_markdown(combined, per_commit, mode, repo, notes))
    if fail_on == "auto":  # the scans' mode: refuse fails on a finding, warn never fails
        fail_on = "findings" if combined.mode == "refuse" else "never"
    if fail_on == "never":
        return 0
    if combined.findings or (fail_on == "notes" and combined.notes):
        return 1
    return 0


def _baseline(workspace: Path, path: str) -> object:
    """The `baseline` input's file, read before any scan (a bad one: exit 2 naming its line)."""
    if not path:
        return None
    from plimsoll_ci.shipscan import baseline

    return baseline.load(workspace / path, path)


def _fetchable(repo: Path, base: str) -> None:
    from plimsoll_ci import git
    from plimsoll_ci.errors import BadInput

    if not git.has_commit(repo, base):
        raise BadInput(f"mode each-commit: the range start {base[:12]} is not in this clone; "
                       "check out with `fetch-depth: 0` (actions/checkout)")


def _markdown(result: object, per_commit: list[tuple[str, int, int]], mode: str,
              repo: Path, notes: list[str]) -> str:
    from plimsoll_ci import git
    from plimsoll_ci.shipscan import report

    text = report.to_markdown(result, title="plimsoll ship scan").rstrip("\n")
    lines = [text, "", f"Mode `{mode}`: {len(per_commit)} commit(s) scanned.", ""]
    lines += [f"- {n}" for n in notes] + ([""] if notes else [])
    if len(per_commit) > 1:
        lines += ["| commit | subject | findings | notes |", "| --- | --- | --- | --- |"]
        for commit, nf, nn in per_commit:
            subject = git.subject(repo, commit).replace("|", "\\|").replace("`", "'")
            lines.append(f"| `{commit[:12]}` | {subject} | {nf} | {nn} |")
        lines.append("")
    if result.findings:  # type: ignore[attr-defined]
        lines += ["What to do: remove the value from the shipped file or exclude the file from "
                  "its ship set; if the branch was ever pushed, treat the values as public and "
                  "rotate them (see docs/when-it-fires.md).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
