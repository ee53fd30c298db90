#!/usr/bin/env bash
# Creates .venv (once) with the pinned CPU torch and torchada installed editable, test extras included.
# Sourced by tools/example.sh and tools/test.sh so that each works on a fresh machine by itself.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
py="${PYTHON:-python3}"
stamp="$venv/.torchada-bootstrap"
want="torch==2.13.0 $(sha256sum "$repo/pyproject.toml" "$repo/tools/heavy_test_libraries.sh" | cut -c1-16 | tr -d '\n')"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # torch is pinned first: an unpinned torch would pull a multi-GB CUDA build.
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==2.13.0"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$repo[test]" "torch==2.13.0"
  bash "$repo/tools/heavy_test_libraries.sh" "$venv/bin/python" "2.13.0"
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
