#!/usr/bin/env bash
# The grade action's step: grade, sign, verify, and write outputs and a job summary.
# Inputs arrive only as environment variables (never interpolated into the script).
set -euo pipefail
: "${RUNNER_TEMP:=${TMPDIR:-/tmp}}"
: "${GITHUB_OUTPUT:=/dev/null}"
: "${GITHUB_STEP_SUMMARY:=/dev/null}"
PLIMSOLL="${PLIMSOLL:-plimsoll-ci}"
BUNDLE="${BUNDLE:-$RUNNER_TEMP/plimsoll-grade.intoto.jsonl}"
RESULT="$RUNNER_TEMP/plimsoll-grade-result.json"

args=(grade --controller "$CONTROLLER" --course "${COURSE:-hard}" --provider "${PROVIDER:-gvisor}"
      --format json -o "$RESULT" --bundle "$BUNDLE")
if [ -n "${MIN_TIER:-}" ]; then args+=(--min-tier "$MIN_TIER"); fi
if [ -n "${SEEDS:-}" ]; then args+=(--seeds "$SEEDS"); else args+=(--fresh "${FRESH:-64}"); fi
if [ -n "${PLIMSOLL_SIGNING_KEY:-}" ]; then
  # (a key from secrets.* is masked by the runner already; it is never echoed here)
  if [ -z "${PUBLIC_KEY:-}" ]; then
    echo "::error::signing-key is set but public-key is not: the bundle could not be verified"
    exit 2
  fi
  args+=(--signing-key-env PLIMSOLL_SIGNING_KEY)
  PUB="$PUBLIC_KEY"
else
  PUB="$RUNNER_TEMP/plimsoll-grade-$$.pub"
  args+=(--ephemeral-key "$PUB")
fi

set +e
"$PLIMSOLL" "${args[@]}"
code=$?
set -e
unset PLIMSOLL_SIGNING_KEY
if [ "$code" -ne 0 ]; then
  echo "::error::plimsoll-ci grade exited $code (1: refused by the ship scan, 2: bad input or tier too weak)"
  exit "$code"
fi
"$PLIMSOLL" verify --pub "$PUB" "$BUNDLE"

python3 - "$RESULT" "$BUNDLE" "$PUB" <<'PY' >> "$GITHUB_OUTPUT"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"landed={r['landed']}\ntotal={r['total']}\ntier={r['tier']}")
print(f"bundle={sys.argv[2]}\npublic-key={sys.argv[3]}\nresult={sys.argv[1]}")
PY
python3 - "$RESULT" <<'PY' >> "$GITHUB_STEP_SUMMARY"
import json, sys
r = json.load(open(sys.argv[1]))
print("## plimsoll-ci grade\n")
print(f"Landed **{r['landed']}/{r['total']}** on the {r['course']} course, provider "
      f"`{r['provider']}`, tier **{r['tier']}** (configured {r['configured_tier']}).\n")
for line in r.get("code_check_summary") or []:
    print(f"- code check: {line}")
print(f"\nCPU: max per tick {r['cpu']['max_tick_s']} s, total {r['cpu']['total_s']} s. "
      "The bundle verified with `plimsoll-ci verify`.")
PY
echo "graded: $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['landed']}/{r['total']} landed, tier {r['tier']}\")" "$RESULT"); bundle $BUNDLE verified"
