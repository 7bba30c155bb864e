#!/usr/bin/env bash
# The grade action's step: grade, sign, verify (--expect-count), and write outputs and a job
# summary. Inputs arrive only as environment variables (never interpolated into the script).
# Runs as the runner's own user: no root is needed here (provider docker grades in gVisor through
# Docker's runsc runtime; the install step, with sudo, registered it).
set -euo pipefail
: "${RUNNER_TEMP:=${TMPDIR:-/tmp}}"
: "${GITHUB_OUTPUT:=/dev/null}"
: "${GITHUB_STEP_SUMMARY:=/dev/null}"
PLIMSOLL="${PLIMSOLL:-plimsoll-ci}"
PY="${PLIMSOLL_PYTHON:-python3}"

# This step's own folder: two grade steps in one job never share a result, key or bundle.
OUT="$(mktemp -d "$RUNNER_TEMP/plimsoll-out-XXXXXXXX")"
chmod 755 "$OUT"
BUNDLE="${BUNDLE:-$OUT/runs.intoto.jsonl}"
RESULT="$OUT/result.json"

args=(grade --controller "$CONTROLLER" --course "${COURSE:-hard}" --provider "${PROVIDER:-docker}"
      --format json -o "$RESULT" --bundle "$BUNDLE" --progress lines)
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
  if [ -e "$BUNDLE" ]; then
    echo "::error::bundle $BUNDLE exists, and a key made for this step cannot append to it: pass" \
         "signing-key and public-key to collect several steps' records in one bundle, or leave" \
         "bundle empty (each step then writes its own)"
    exit 2
  fi
  PUB="$OUT/grader.pub"
  args+=(--ephemeral-key "$PUB")
fi

# Records already in a named bundle: the verify below expects exactly one more.
before=0
if [ -e "$BUNDLE" ]; then
  before="$("$PLIMSOLL" verify --pub "$PUB" --format json "$BUNDLE" \
            | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["summary"]["records"])')" || {
    echo "::error::bundle $BUNDLE does not verify under $PUB: nothing was graded"
    exit 2
  }
fi

set +e
"$PLIMSOLL" "${args[@]}"
code=$?
set -e
unset PLIMSOLL_SIGNING_KEY
if [ "$code" -ne 0 ]; then
  echo "::error::plimsoll-ci grade exited $code (1: refused by the ship scan, 2: bad input or tier too weak; the log above says why)"
  exit "$code"
fi
"$PLIMSOLL" verify --pub "$PUB" --expect-count "$((before + 1))" "$BUNDLE"

"$PY" - "$RESULT" "$BUNDLE" "$PUB" "$OUT" <<'PY' >> "$GITHUB_OUTPUT"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"landed={r['landed']}\ntotal={r['total']}\ntier={r['tier']}")
print(f"bundle={sys.argv[2]}\npublic-key={sys.argv[3]}\nresult={sys.argv[1]}\nfolder={sys.argv[4]}")
PY
"$PY" - "$RESULT" <<'PY' >> "$GITHUB_STEP_SUMMARY"
import json, sys
r = json.load(open(sys.argv[1]))
print("## plimsoll-ci grade\n")
print(f"Landed **{r['landed']}/{r['total']}** on the {r['course']} course, provider "
      f"`{r['provider']}`, tier **{r['tier']}** (configured {r['configured_tier']}).\n")
for line in r.get("code_check_summary") or []:
    print(f"- code check: {line}")
print(f"\nCPU: max per tick {r['cpu']['max_tick_s']} s, total {r['cpu']['total_s']} s. "
      "The bundle verified with `plimsoll-ci verify --expect-count`.")
PY
echo "graded: $("$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['landed']}/{r['total']} landed, tier {r['tier']}\")" "$RESULT"); bundle $BUNDLE verified ($((before + 1)) records)"
