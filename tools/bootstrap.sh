#!/usr/bin/env bash
# Creates .venv (once) with the pinned CPU torch and torchada installed editable, test extras included.
# Sourced by tools/example.sh and tools/test.sh so that each works on a fresh machine by itself.
# Each step says first what it installs (on stderr: the program's own output stays apart); on a
# terminal pip shows its own progress, in a log (no terminal) each step is that one line. Once the
# stamp says all is installed, nothing is printed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
py="${PYTHON:-python3}"
stamp="$venv/.torchada-bootstrap"
want="torch==2.13.0 $(sha256sum "$repo/pyproject.toml" "$repo/tools/heavy_test_libraries.sh" | cut -c1-16 | tr -d '\n')"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  setup_start=$SECONDS
  note="torchada setup (once):"
  if [ -t 1 ]; then pip_output=--progress-bar=on; else pip_output=-q; fi
  if [ ! -x "$venv/bin/python" ]; then
    echo "$note creating the virtual environment .venv with $py..." >&2
    "$py" -m venv "$venv"
  fi
  pip=("$venv/bin/python" -m pip install "$pip_output" --disable-pip-version-check)
  # torch is pinned first: an unpinned torch would pull a multi-GB CUDA build.
  echo "$note installing torch 2.13.0 into .venv (about 200 MB for the CPU build)..." >&2
  "${pip[@]}" "torch==2.13.0"
  echo "$note installing torchada (editable) and the test suite's libraries..." >&2
  "${pip[@]}" -e "$repo[test]" "torch==2.13.0"
  bash "$repo/tools/heavy_test_libraries.sh" "$venv/bin/python" "2.13.0"
  echo "$want" > "$stamp"
  echo "$note done in $((SECONDS - setup_start)) s; later runs skip it" >&2
fi
export PATH="$venv/bin:$PATH"
