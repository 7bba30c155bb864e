"""Grading: controller protocol, seed sets (parse, draw, commit, reveal), scoring in sandboxes.

The library a command, a squeeze job or an eval harness calls (nothing here prints):

- `request.GradeRequest`: what to grade (controller, course, seeds or a fresh set, provider, ...)
- `run.grade(request, progress=None) -> result.GradeResult`: stage, scan, fly; typed outcome
- `sign.grade_and_sign(request, signer=None, bundle=None, progress=None) -> GradeResult`, and
  `sign.sign(results, signer, bundle)` for many records in one sealed append
- `seeds`: seed lists and files; `fresh`: fresh sets (draw, commit, reveal); `seedsets`: held-out
  sets on disk (draw, commit, reveal, check, `open_sealed`) and smoke seeds; `seedlint`: the seed
  lint and a grading's seed check; `checks`: the last-step ship scan of a controller; `lockstep`:
  the trusted side of the protocol

This `__init__` imports nothing, so `grading.fresh` stays cheap for the verifier.
"""
