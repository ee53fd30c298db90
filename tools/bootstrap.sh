#!/usr/bin/env bash
# Creates .venv (once) with the pinned CPU torch and torchada installed editable, test extras included.
# Sourced by tools/example.sh and tools/test.sh so that each works on a fresh machine by itself.
# tools/install_venv.sh says before each step what it installs (on stderr: the program's own
# output stays apart). Once the stamp says all is installed, nothing is printed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
stamp="$venv/.torchada-bootstrap"
want="torch==2.13.0 $(sha256sum "$repo/pyproject.toml" "$repo/tools/install_venv.sh" "$repo/tools/heavy_test_libraries.sh" | cut -c1-16 | tr -d '\n')"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  bash "$repo/tools/install_venv.sh" "$venv" 2.13.0 "torchada setup (once):"
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
