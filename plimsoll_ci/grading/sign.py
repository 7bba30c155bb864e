"""Signed run records of gradings: one call for a grading and its record, or a batch of records.

    result = grade_and_sign(request, signer, "runs.intoto.jsonl")   # signing optional
    result.record                                                    # its number in the bundle

    results = [run.grade(r) for r in requests]                       # e.g. many in parallel
    results = sign(results, signer, "runs.intoto.jsonl")             # one sealed append

Signing happens here, on the trusted side, over digests this process computed itself: the staged
controller files, the result document, the practice set, the fresh set's commitment, a sealed
set's commitment and reveal (checked against each other before any flight), and the seed check.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plimsoll_ci import digests
from plimsoll_ci.attest import bundle as bundle_mod
from plimsoll_ci.attest import record
from plimsoll_ci.attest.keys import Signer
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.grading.request import GradeRequest, Progress, ProgressFn
from plimsoll_ci.grading.result import GradeResult
from plimsoll_ci.grading.run import grade


def flew_practice(result: GradeResult) -> bool:
    """Whether any flight flew a practice seed: only then does a record name the practice set
    (a grading on fresh or explicit held-out seeds alone records `practiceSet: null`)."""
    practice = set(result.practice_set)
    return any(f.seed is not None and f.seed in practice for f in result.flights)


def run_record(result: GradeResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (result document, predicate) pair a signed record of `result` holds."""
    if result.refused:
        raise BadInput("a refused grading has no run record: nothing was flown")
    assert result.tier is not None
    doc = result.document()
    predicate = record.make_predicate(
        result_doc=doc, controller_files=result.controller_files, course=result.course,
        provider=result.provider, tier=result.tier, evidence=result.evidence,
        cpu_budget=result.budget.record(), started=result.started, finished=result.finished,
        practice_set_digest=digests.practice_set_digest(result.practice_set)
        if flew_practice(result) else None,
        fresh_commitment=result.commitment,
        fresh_reveal=None if result.fresh is None else fresh_mod.reveal(result.fresh),
        sealed_set=None if result.sealed is None else result.sealed.commitment.record(),
        sealed_reveal=None if result.sealed is None else fresh_mod.reveal(result.sealed.fresh),
        seed_check=None if result.seed_check is None else result.seed_check.record())
    return doc, predicate


def sign(results: Sequence[GradeResult], signer: Signer,
         bundle: str | os.PathLike[str]) -> list[GradeResult]:
    """Append one signed record per result to `bundle` in one sealed write (created if missing);
    the results with their record numbers. BadInput for a refused result or a bundle that does not
    verify under `signer` (nothing is written then)."""
    runs = [run_record(r) for r in results]
    count = bundle_mod.append_runs(bundle, runs, signer)
    first = count - len(results) + 1
    return [dataclasses.replace(r, bundle=os.fspath(bundle), record=first + n)
            for n, r in enumerate(results)]


def check_bundle(bundle: str | os.PathLike[str], signer: Signer) -> None:
    """BadInput unless a record signed by `signer` can be appended to `bundle`: its folder exists,
    and the bundle is missing (a new one) or verifies under `signer`'s key. Appending checks again
    under the bundle's lock; this check only spares a grading whose record would be refused."""
    path = Path(bundle)
    if not path.parent.is_dir():
        raise BadInput(f"bundle {path}: folder {path.parent} does not exist; create it first")
    if not path.exists():
        return
    report = bundle_mod.verify_bundle(path, signer.public)
    if not report.ok:
        shown = "; ".join(str(p) for p in report.problems[:3])
        raise BadInput(f"bundle {path}: does not verify under this run's key ({shown}); nothing "
                       "was graded. Use the key that started it, or a new bundle path")


def grade_and_sign(request: GradeRequest, signer: Signer | None = None,
                   bundle: str | os.PathLike[str] | None = None,
                   progress: ProgressFn | None = None) -> GradeResult:
    """Grade `request` and, with a signer and a bundle, append the signed run record of a graded
    (not refused) result. Give both or neither; a bundle that could not take the record is
    refused (BadInput) before anything is staged or flown."""
    if (signer is None) != (bundle is None):
        raise BadInput("signing needs both a key and a bundle: give a bundle to append the "
                       "record to (--bundle FILE) and a signing key, or neither")
    if signer is not None and bundle is not None:
        check_bundle(bundle, signer)  # a bundle that cannot take the record: before any flight
    result = grade(request, progress)
    if signer is None or bundle is None or result.refused:
        return result
    [signed] = sign([result], signer, bundle)
    if progress is not None:
        progress(Progress("signed", result.total, result.total,
                          f"record {signed.record} appended to {signed.bundle}"))
    return signed
