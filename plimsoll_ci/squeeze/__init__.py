"""The squeeze: grade a loop against its rebuilds, compute the gap, draw the line, sign evidence.

    job = plimsoll_ci.squeeze.job.load("squeeze.yaml")
    outcome = plimsoll_ci.squeeze.run.run(job, Options(out=...), progress.make())
    found = plimsoll_ci.squeeze.verify.verify(out, public_key)

Modules: `job` (the job file), `plan` (gradings, shards, the context every record carries),
`grader` (the one adapter over the grader: one controller on the practice and fresh sets),
`pool` (parallel workers, clean stop on signals), `checks` (code checks through the ship-scan
engine), `recipes` (token counts, offline BPE), `verdicts` (the arithmetic), `records` (signed
records read back and cross-checked), `result` (result.json, evidence.json), `report_md`,
`report_html`, `artifacts` (everything the records determine, for run and verify alike),
`run` (the order of events), `verify`, `progress`. Rebuilds made through a model (`build: N`)
will come in as sessions that produce controllers for `plan`; nothing downstream of `grader`
needs to change for them.
"""

from __future__ import annotations
