"""The answer-key tripwire: did the harness send a model what it must never see?

Modules, each importing only the ones above it:

- `formats`   the on-disk format tags of this package (recordings, canary files, canary reports);
              a sealed set's tag is `withheld.SEALED_FORMAT`
- `reader`    recorded requests (recorder files, HAR, JSON, JSON Lines, multipart, raw) -> pieces
- `matching`  pieces -> findings, through the ship scan's front end (`plimsoll_ci.shipscan.scan.Verdicts`)
- `requests`  `scan_requests`: a requests folder -> a `ScanResult` redacted by the one redactor
              (`plimsoll_ci.shipscan.redact`), worker processes for large folders
- `canary`    canary markers: make, load, check
- `sealed`    `load_sealed`: a sealed set, a withheld set or a canary file -> a set to match
- `report`    the tripwire's and the canary check's reports
- `apis`      which model API a request speaks; errors in that API's shape
- `recording` the recorder's folder: lock, numbering, files written whole or not at all
- `recorder`  the recording reverse proxy (`plimsoll-ci record`)

Nothing is imported here, so `plimsoll-ci record` does not load the matching engine.
"""
