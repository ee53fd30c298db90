#!/usr/bin/env bash
# Installs into a venv (made first if missing) what one of the project's jobs needs; each step
# first says what it installs, on stderr:
#   tools/install_venv.sh VENV TORCH_VERSION NOTE [main|test|all]
# main: the pinned torch and torchada editable with what its native builds need (ninja): what the
#       main job (tools/example.sh) runs, and nothing else.
# test: the test suite's libraries (pyproject's [test] extra and tools/heavy_test_libraries.sh),
#       into a venv that main has made.
# all (the default): main, then test.
# NOTE begins each line ("torchada setup (once):"). On a terminal pip shows its own progress; in a
# log (no terminal) each step is its one line. Used by tools/bootstrap.sh and tools/compat.sh,
# which decide (by their stamps) which levels are needed.
set -euo pipefail
venv="$1"
version="$2"
note="$3"
level="${4:-all}"
case "$level" in
  main | test | all) ;;
  *) echo "install_venv.sh: level '$level' is not one of main, test, all" >&2; exit 2 ;;
esac
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"
start=$SECONDS
if [ -t 1 ]; then pip_output=--progress-bar=on; else pip_output=-q; fi
# In a log, where pip is quiet, a step says every 15 s that it is still going (a minute of silence
# cannot be told from a hang); on a terminal pip's own progress shows it.
ticking() {
  local what="$1" started=$SECONDS ticker="" status=0
  shift
  if [ ! -t 1 ]; then
    # Its sleep is stopped with it, so that no one waits on a pipe it holds open.
    (
      trap 'kill "$nap" 2>/dev/null; exit 0' TERM
      while :; do
        sleep 15 & nap=$!
        wait "$nap"
        echo "$note still installing $what: $((SECONDS - started)) s so far" >&2
      done
    ) &
    ticker=$!
  fi
  "$@" || status=$?
  if [ -n "$ticker" ]; then kill "$ticker" 2>/dev/null; wait "$ticker" 2>/dev/null || true; fi
  return "$status"
}
step() {
  echo "$note installing $1..." >&2
  ticking "$@"
}
if [ ! -x "$venv/bin/python" ]; then
  echo "$note creating the virtual environment $venv with $py..." >&2
  "$py" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install "$pip_output" --disable-pip-version-check)
if [ "$level" != test ]; then
  size="a CUDA build: about 3 GB with its nvidia libraries"
  [ "$version" != "2.13.0" ] || size="about 200 MB for the CPU build"
  # torch is pinned first: an unpinned torch would pull the newest (a multi-GB CUDA build).
  step "torch $version ($size)" "${pip[@]}" "torch==$version"
  # torch pinned again, so that nothing moves it; [native]: ninja, for torchada's native builds.
  step "torchada (editable) and ninja" "${pip[@]}" -e "$repo[native]" "torch==$version"
fi
if [ "$level" != main ]; then
  step "the test suite's libraries" "${pip[@]}" -e "$repo[test]" "torch==$version"
  # It says itself what it installs.
  ticking "DeepSpeed and Megatron-core" \
    bash "$repo/tools/heavy_test_libraries.sh" "$venv/bin/python" "$version" "$note"
fi
echo "$note done in $((SECONDS - start)) s; later runs skip it" >&2
