"""Coding-model task attempts in sandboxed copies of your own repository (`plimsoll-ci eval`).

    from plimsoll_ci.evalharness.run import EvalRequest, run_eval

    result = run_eval(EvalRequest(repo=".", tasks="eval/tasks", models=(config,), out="eval-out"))
    result.exit_code, result.tables, result.documents

Modules, each importing only the ones above it:

- `tasks`     task files: Markdown with a front matter (test, touch, allow, probe)
- `snapshot`  the repository's tracked files, read once from the index; written fresh per attempt
- `contract`  the JSON contract a model answers in, and the messages it is sent
- `edits`     a model's edits, applied inside its copy only
- `diff`      what an attempt changed (raw diff, binary changes summarized)
- `scores`    the three scores: test passed, in scope (test files flagged), refused commands
- `attempt`   one attempt: copy, rounds, allowlist, sandboxed commands, guarded test
- `report`    results.json entries, a table per model, report.md
- `wall`      the tier earned by the start-up checks, the recorder, the tripwire
- `run`       the whole run: scan, attempts, results, signed records

Commands run through `plimsoll_ci.sandbox.command` (one fresh sandbox per command; the copy
read-write, everything else read-only, no network, limits, a hard timeout). See `docs/eval.md`.
"""
