#!/usr/bin/env bash
# The squeeze action's step: canary, then plan, run (whole or one shard) or merge; verify; write
# outputs and a job summary. Inputs arrive only as environment variables (never interpolated into
# the script). Runs as the runner's own user: no root is needed here (provider docker grades in
# gVisor through Docker's runsc runtime; the install step, with sudo, registered it).
set -euo pipefail
: "${RUNNER_TEMP:=${TMPDIR:-/tmp}}"
: "${GITHUB_OUTPUT:=/dev/null}"
: "${GITHUB_STEP_SUMMARY:=/dev/null}"
PLIMSOLL="${PLIMSOLL:-plimsoll-ci}"
PY="${PLIMSOLL_PYTHON:-python3}"
MODE="${MODE:-run}"

# This step's own folder: two squeeze steps in one job never share artifacts.
OUT="$(mktemp -d "$RUNNER_TEMP/plimsoll-squeeze-XXXXXXXX")"
chmod 755 "$OUT"
common=(--provider "${PROVIDER:-docker}" --jobs "${JOBS:-0}")
if [ -n "${MIN_TIER:-}" ]; then common+=(--min-tier "$MIN_TIER"); fi
keyed=()
if [ -n "${PLIMSOLL_SIGNING_KEY:-}" ]; then keyed=(--signing-key-env PLIMSOLL_SIGNING_KEY); fi

fail() { echo "::error::$1"; exit "${2:-2}"; }

# The pinned key: the public half of the job key (signing-key), derived here from the secret,
# never read from a folder this step checks. Every verification below trusts it, and a merge
# trusts it (or trusted-keys) for the shards and the plan.
JOB_PUB=""
if [ -n "${PLIMSOLL_SIGNING_KEY:-}" ]; then
  JOB_PUB="$(mktemp "$RUNNER_TEMP/plimsoll-job-XXXXXXXX.pub")"
  printf '%s\n' "$PLIMSOLL_SIGNING_KEY" | openssl pkey -pubout -out "$JOB_PUB" 2>/dev/null \
    || fail "signing-key: not a PEM private key (make one with plimsoll-ci keygen)"
fi

canary() {
  if [ "${CANARY:-true}" = "true" ]; then
    "$PLIMSOLL" squeeze canary "$JOB" --echo --provider "${PROVIDER:-docker}" \
      || fail "squeeze canary: the rebuild harness leaks (or could not run): nothing was graded" 1
  fi
}

name="${ARTIFACT_NAME:-}"
case "$MODE" in
  plan)
    canary
    "$PLIMSOLL" squeeze plan "$JOB" --out "$OUT" "${common[@]}" "${keyed[@]}" \
      || fail "squeeze plan exited $? (the log above says why)" 2
    status=planned
    name="${name:-plimsoll-squeeze-plan}"
    ;;
  run)
    args=(squeeze run "$JOB" --out "$OUT" "${common[@]}" "${keyed[@]}")
    if [ -n "${PLAN:-}" ]; then
      args+=(--plan "$PLAN")
      if [ -n "${SHARD:-}" ]; then args+=(--shard "$SHARD"); fi
    else
      [ -z "${SHARD:-}" ] || fail "shard needs plan: the folder of a mode plan step"
      canary
    fi
    set +e
    "$PLIMSOLL" "${args[@]}"
    code=$?
    set -e
    [ "$code" -eq 0 ] || fail "plimsoll-ci squeeze run exited $code (1: the wall was breached or no rebuild to grade, 2: bad input or tier too weak, 143: cancelled; the log above says why)" "$code"
    status=done
    if [ -n "${SHARD:-}" ]; then
      name="${name:-plimsoll-squeeze-shard-${SHARD/\//-of-}}"
    else
      name="${name:-plimsoll-squeeze}"
    fi
    ;;
  merge)
    read -r -a patterns <<< "${SHARDS:-}"
    dirs=()
    for p in "${patterns[@]}"; do
      for d in $p; do dirs+=("$d"); done  # (word splitting here expands the globs)
    done
    [ "${#dirs[@]}" -gt 0 ] || fail "mode merge: shards names no folder"
    pins=()
    read -r -a key_patterns <<< "${TRUSTED_KEYS:-}"
    for p in "${key_patterns[@]}"; do
      for k in $p; do pins+=(--pub "$k"); done  # (word splitting here expands the globs)
    done
    if [ "${#pins[@]}" -eq 0 ] && [ -n "$JOB_PUB" ]; then pins=(--pub "$JOB_PUB"); fi
    [ "${#pins[@]}" -gt 0 ] || fail "mode merge: give trusted-keys (the shards' public keys, from the repository or a variable) or signing-key (the job key that signed the plan and every shard); a merge never trusts a key found in a shard's folder"
    args=(bundle merge "${dirs[@]}" "${pins[@]}" --out "$OUT" "${keyed[@]}")
    if [ -n "${PLAN:-}" ]; then args+=(--plan "$PLAN"); fi
    rmdir "$OUT"  # the merge writes the whole folder at once
    "$PLIMSOLL" "${args[@]}" || fail "bundle merge refused the shards (the log above says why)" 2
    status=done
    name="${name:-plimsoll-squeeze}"
    ;;
  *) fail "mode $MODE: give run, plan or merge" ;;
esac
unset PLIMSOLL_SIGNING_KEY

# Verify under the pinned job key when there is one; an ephemeral key's only copy is the folder's
# own harness.pub, and verifying under it proves consistency only (the output says so).
PUB="${JOB_PUB:-$OUT/harness.pub}"
BUNDLE="$OUT/bundle.intoto.jsonl"
if [ "$status" = done ] && [ -n "${SHARD:-}" ]; then
  # A shard's bundle: every record of its slice (the merge checks the rest).
  signed="$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["gradings"]["signed"])' "$OUT/run.json")"
  "$PLIMSOLL" verify --pub "$PUB" --expect-count "$signed" "$BUNDLE"
elif [ "$status" = done ] && [ "$MODE" = merge ]; then
  shard_pins=()
  for ((i = 0; i < ${#pins[@]}; i += 2)); do shard_pins+=(--shard-pub "${pins[i+1]}"); done
  "$PLIMSOLL" squeeze verify "$OUT" --pub "$PUB" "${shard_pins[@]}"
elif [ "$status" = done ]; then
  "$PLIMSOLL" squeeze verify "$OUT" --pub "$PUB"
fi

"$PY" - "$OUT" "$status" "$name" "${SHARD:-}" <<'PY' >> "$GITHUB_OUTPUT"
import json, sys
from pathlib import Path
out, status, name, shard = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
verdicts = arithmetic = gaps = ""
if (out / "result.json").is_file():
    r = json.loads((out / "result.json").read_text())
    # what a gate reads: a loop whose own controller carries practice seeds or the generator is
    # "flag: carries ..." under every line, never a plain pass
    verdicts = json.dumps({loop["name"]: loop["combined_verdict"] for loop in r["loops"]},
                          sort_keys=True)
    arithmetic = json.dumps({loop["name"]: loop["verdict"] for loop in r["loops"]},
                            sort_keys=True)
    gaps = json.dumps({loop["name"]: loop["gap"] for loop in r["loops"]}, sort_keys=True)
bundle = out / "bundle.intoto.jsonl"
pub = out / "harness.pub"
print(f"status={status}\nverdicts={verdicts}\narithmetic-verdicts={arithmetic}\ngaps={gaps}")
print(f"folder={out}\nartifact-name={name}")
print(f"bundle={bundle if bundle.is_file() else ''}\npublic-key={pub if pub.is_file() else ''}")
PY
if [ -f "$OUT/report.md" ]; then
  { cat "$OUT/report.md"; echo; echo "The out folder verified with \`plimsoll-ci squeeze verify\`."; } >> "$GITHUB_STEP_SUMMARY"
elif [ "$status" = planned ]; then
  echo "## plimsoll-ci squeeze plan: the fresh set is drawn and committed; the shards grade against it" >> "$GITHUB_STEP_SUMMARY"
else
  echo "## plimsoll-ci squeeze shard ${SHARD}: its records verified; the merge derives the verdicts" >> "$GITHUB_STEP_SUMMARY"
fi
echo "squeeze $MODE${SHARD:+ $SHARD}: $status; out folder $OUT (artifact $name)"
