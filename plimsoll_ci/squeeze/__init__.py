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
`run` (the order of events), `verify`, `progress`.

Rebuilds made through a model (`build: N`): `rebuild` (one session: brief, three tools, outcome),
`brief` (what the model is told), `workspace` (`write_file`), `sandboxed` (`run_code`),
`sessions` (every session of a job, in parallel; their records), `wall` (the sealed secrets, the
recording proxy, the tripwire and the canaries: the one module importing them), `compress`
(`squeeze recipe`), `canary` and `echo` (`squeeze canary`). Their controllers enter `plan` as
`built/GROUP/N`; nothing downstream of `grader` changed for them.
"""

from __future__ import annotations
