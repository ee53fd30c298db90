#!/usr/bin/env bash
# Runs the whole test suite on the simulated MUSA device (CPU only; GPU tests are skipped).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TORCHADA_SETUP=test source "$here/bootstrap.sh"
cd "$here/.."
exec python -m pytest -q "$@"
