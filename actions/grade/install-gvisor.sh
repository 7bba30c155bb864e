#!/usr/bin/env bash
# The grade action's install step: gVisor's runsc, and for provider docker its registration as
# Docker's `runsc` runtime. The only step that uses sudo (none when it already runs as root).
#
# Where the runner's release ships runsc (Debian 12 and later; Ubuntu 25.10 and later, universe),
# it comes from the distribution's archive. Where it does not (Ubuntu 22.04 and 24.04, which
# `ubuntu-latest` is), gVisor's own apt repository is added the way gVisor documents it
# (https://gvisor.dev/docs/user_guide/install/): its signing key from gvisor.dev/archive.key,
# then `apt-get install runsc`.
set -euo pipefail
PROVIDER="${PROVIDER:-docker}"
say() { echo "install-gvisor: $*"; }
SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi

if [ "$PROVIDER" = process ]; then
  say "provider process: no gVisor needed"
  exit 0
fi

if command -v runsc >/dev/null 2>&1; then
  say "runsc is installed: $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
else
  "${SUDO[@]}" apt-get update -qq
  candidate="$(apt-cache policy runsc 2>/dev/null | sed -n 's/^ *Candidate: *//p' | head -1)"
  if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
    say "installing runsc $candidate from this release's archive"
  else
    . /etc/os-release 2>/dev/null || true
    say "${PRETTY_NAME:-this release} has no runsc package: adding gVisor's apt repository"
    "${SUDO[@]}" apt-get install -y -qq ca-certificates curl gnupg >/dev/null
    curl -fsSL https://gvisor.dev/archive.key \
      | "${SUDO[@]}" gpg --dearmor --yes -o /usr/share/keyrings/gvisor-archive-keyring.gpg
    echo "deb [arch=$(dpkg --print-architecture) signed-by=/usr/share/keyrings/gvisor-archive-keyring.gpg] https://storage.googleapis.com/gvisor/releases release main" \
      | "${SUDO[@]}" tee /etc/apt/sources.list.d/gvisor.list >/dev/null
    "${SUDO[@]}" apt-get update -qq
  fi
  "${SUDO[@]}" apt-get install -y -qq runsc >/dev/null
  say "installed $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
fi

if [ "$PROVIDER" != docker ]; then
  exit 0
fi
runtimes() { docker info --format '{{json .Runtimes}}' 2>/dev/null || true; }
if runtimes | grep -q '"runsc"'; then
  say "dockerd has the runsc runtime"
  exit 0
fi
say "registering runsc as Docker's runsc runtime (runsc install) and restarting dockerd"
"${SUDO[@]}" "$(command -v runsc)" install
"${SUDO[@]}" systemctl restart docker
for _ in $(seq 1 60); do
  if runtimes | grep -q '"runsc"'; then say "dockerd has the runsc runtime"; exit 0; fi
  sleep 1
done
echo "::error::dockerd did not come back with the runsc runtime; see 'sudo journalctl -u docker'"
exit 1
