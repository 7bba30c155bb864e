"""Format tags of the tripwire's files and reports, defined once.

A sealed set's tag is `plimsoll_ci.withheld.SEALED_FORMAT` (a sealed set is a withheld set with
another tag); the report formats are `plimsoll_ci.shipscan.report.FORMATS`.
"""

from __future__ import annotations

import re

RECORD_FORMAT = "plimsoll-record/1"  # the recorder's request and response files
CANARY_FORMAT = "plimsoll-canary/1"  # a canary file (markers and their sealed set)
CANARY_CHECK_FORMAT = "plimsoll-canary-check/1"  # `canary check --format json`
CREDENTIAL_REDACTED = "[redacted]"  # what the recorder writes in place of a credential

# A recording folder (`plimsoll_ci.tripwire.recording` writes it, `reader` reads it)
RECORDER_LOCK = ".plimsoll-record.lock"  # empty; held by the one recorder writing the folder
NUMBERED = re.compile(r"(\d+)\.(request|response)\.(body|json)")
UNFINISHED = re.compile(r"\.\d+\.(request|response)\.(body|json)\.\d+\.\d+\.tmp"
                        r"|\d+\.(request|response)\.(body|json)\.part")  # .part: older recorders
