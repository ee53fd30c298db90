#!/usr/bin/env bash
# The main job: an unmodified CUDA-written training script run on the simulated MUSA device.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Only what it runs: torch, torchada and ninja (tools/test.sh adds the test suite's libraries).
TORCHADA_SETUP=main source "$here/bootstrap.sh"
cd "$here/.."
exec python -m torchada.run --simulate examples/train_cuda.py "$@"
