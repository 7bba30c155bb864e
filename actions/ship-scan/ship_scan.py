"""The ship-scan action's step: scan the tip or every commit of a pull request, report, decide.

Reads its inputs from `INPUT_*` variables (set by action.yml from `${{ inputs.* }}`, never pasted
into the script, so an input cannot inject shell), and GitHub's own `GITHUB_*` variables:
GITHUB_WORKSPACE (the checkout), GITHUB_EVENT_NAME / GITHUB_EVENT_PATH (the pull request or push
range), GITHUB_OUTPUT (outputs), GITHUB_STEP_SUMMARY (the Markdown job summary), RUNNER_TEMP.

Exit codes: 0 pass, 1 failed by `fail-on`, 2 bad input (config, key, range), or a builder's own
exit code when it fails.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


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


def _event_range() -> tuple[str | None, str | None]:
    name = os.environ.get("GITHUB_EVENT_NAME", "")
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return None, None
    with open(path, encoding="utf-8") as fh:
        event = json.load(fh)
    if name.startswith("pull_request") or "pull_request" in event:
        pr = event.get("pull_request") or {}
        return (pr.get("base") or {}).get("sha"), (pr.get("head") or {}).get("sha")
    if name == "push" or "before" in event:
        return event.get("before"), event.get("after")
    return None, None


def main() -> int:
    """Run the scan as the action's inputs ask; returns the step's exit code."""
    # The key leaves the environment at once: builders run from here must never see it.
    key_text = os.environ.pop("INPUT_KEY", "")
    if key_text:
        print(f"::add-mask::{key_text}")

    from plimsoll_ci import git, hook
    from plimsoll_ci.errors import PlimsollError

    inputs = {k: os.environ.get(f"INPUT_{k}", "").strip()
              for k in ("CONFIG", "SHIP_SET", "FORMAT", "FAIL_ON", "MODE", "BASE", "HEAD",
                        "SARIF_FILE")}
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
        if mode == "tip":
            commits = [git.resolve_rev(repo, inputs["HEAD"] or "HEAD")]
        else:
            base, head = _event_range()
            base = inputs["BASE"] or base
            head = inputs["HEAD"] or head or "HEAD"
            if not base or set(base) == {"0"}:
                raise PlimsollError(
                    "mode each-commit: no range start (not a pull_request or push event); pass "
                    "the base input, or use mode: tip")
            _fetchable(repo, base)
            commits = git.commits_between(repo, base, head)
        key = key_text.encode("utf-8") if key_text else None
        results = hook.scan_commits(repo, commits, inputs["CONFIG"] or None,
                                    inputs["SHIP_SET"] or None, key=key)
    except PlimsollError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"::error title=plimsoll ship scan::{_data(first)}")
        print(f"plimsoll ship scan: error: {e}", file=sys.stderr)
        _out("findings", "")
        _out("commits", "0")
        _summary(f"## plimsoll ship scan\n\n:x: error: {first}\n")
        return e.exit_code

    from plimsoll_ci import report, scan

    # One result for the run: each commit's findings once, named by the commit that first shipped
    # them; the mode (hence SARIF levels, annotations and `fail-on: auto`) is the scans' own.
    combined = scan.combine([(f"commit {c[:12]}" if mode == "each-commit" else "", r)
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
    _summary(_markdown(combined, per_commit, mode, repo))
    if fail_on == "auto":  # the scans' mode: refuse fails on a finding, warn never fails
        fail_on = "findings" if combined.mode == "refuse" else "never"
    if fail_on == "never":
        return 0
    if combined.findings or (fail_on == "notes" and combined.notes):
        return 1
    return 0


def _fetchable(repo: Path, base: str) -> None:
    from plimsoll_ci import git
    from plimsoll_ci.errors import BadInput

    if not git.has_commit(repo, base):
        raise BadInput(f"mode each-commit: the range start {base[:12]} is not in this clone; "
                       "check out with `fetch-depth: 0` (actions/checkout)")


def _markdown(result: object, per_commit: list[tuple[str, int, int]], mode: str,
              repo: Path) -> str:
    from plimsoll_ci import git, report

    text = report.to_markdown(result, title="plimsoll ship scan").rstrip("\n")
    lines = [text, "", f"Mode `{mode}`: {len(per_commit)} commit(s) scanned.", ""]
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
