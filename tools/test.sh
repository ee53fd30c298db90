#!/usr/bin/env bash
# Runs the whole test suite on the simulated MUSA device (CPU only; GPU tests are skipped).
# With no arguments it runs as two pytest processes side by side (tools/test_parts.py; set
# TORCHADA_TEST_JOBS=1 for one process); with arguments, one pytest process given them:
#   bash tools/test.sh tests/cuda -x
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TORCHADA_SETUP=test source "$here/bootstrap.sh"
cd "$here/.."
jobs="${TORCHADA_TEST_JOBS:-2}"
if [ "$#" -gt 0 ] || [ "$jobs" = 1 ]; then
  exec python -m pytest -q "$@"
fi
exec python tools/test_parts.py "$jobs"
