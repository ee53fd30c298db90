#!/usr/bin/env bash
# Creates .venv (once) with the pinned CPU torch and torchada installed editable; with
# TORCHADA_SETUP=test (the default) the test suite's libraries too, with TORCHADA_SETUP=main
# (tools/example.sh) only what the main job runs. Sourced by tools/example.sh and tools/test.sh so
# that each works on a fresh machine by itself, in either order: each level has its own stamp,
# so the main job never reinstalls what the tests added, and the tests add only their libraries
# to a venv the main job made.
# tools/install_venv.sh says before each step what it installs (on stderr: the program's own
# output stays apart). Once the stamps say all is installed, nothing is printed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
setup="${TORCHADA_SETUP:-test}"
digest() { sha256sum "$@" | cut -c1-16 | tr -d '\n'; }
# What each level installs follows from these files; a stamp holds the digest it was made from.
main_want="torch==2.13.0 $(digest "$repo/pyproject.toml" "$repo/tools/install_venv.sh")"
test_want="$main_want $(digest "$repo/tools/heavy_test_libraries.sh")"
stamped() { [ -x "$venv/bin/python" ] && [ -f "$venv/$1" ] && [ "$(cat "$venv/$1")" = "$2" ]; }
levels=()
stamped .torchada-setup-main "$main_want" || levels+=(main)
if [ "$setup" = test ] && ! stamped .torchada-setup-test "$test_want"; then levels+=(test); fi
if [ "${#levels[@]}" -gt 0 ]; then
  level="${levels[0]}"
  [ "${#levels[@]}" = 1 ] || level=all
  # A new main level may move what the tests' level installed: its stamp goes first.
  [ "$level" = test ] || rm -f "$venv/.torchada-setup-test"
  bash "$repo/tools/install_venv.sh" "$venv" 2.13.0 "torchada setup (once):" "$level"
  echo "$main_want" > "$venv/.torchada-setup-main"
  [ "$level" = main ] || echo "$test_want" > "$venv/.torchada-setup-test"
fi
unset -v level levels setup main_want test_want
unset -f digest stamped
export PATH="$venv/bin:$PATH"
