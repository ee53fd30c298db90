#!/usr/bin/env bash
# Runs the test suite on another torch: tools/compat.sh VERSION [pytest args...]
#
# One venv per torch version is kept in a cache outside the repository
# (TORCHADA_COMPAT_CACHE, default ~/.cache/torchada/compat), made on first use. Only the versions a
# torch_musa release pairs with are accepted, each pinned exactly: an unpinned torch would pull the
# newest release. Every torch but 2.13.0 is a CUDA build from the registry (about 3 GB of nvidia
# wheels); it imports fine without a GPU.
#
#   bash tools/compat.sh 2.7.1                        # the whole suite on torch 2.7.1
#   bash tools/compat.sh 2.9.1 tests/simulator -x     # part of it
#   bash tools/compat.sh 2.7.1 --setup-only           # only make (or refresh) the venv
set -euo pipefail
supported="2.7.1 2.9.1 2.11.0 2.12.0 2.13.0"
version="${1:-}"
if [ -z "$version" ] || ! [[ " $supported " == *" $version "* ]]; then
  echo "usage: tools/compat.sh VERSION [pytest args...]   (VERSION one of: $supported)" >&2
  [ -z "$version" ] || echo "compat.sh: torch '$version' is not a version we test; pick one above" >&2
  exit 2
fi
shift
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TORCHADA_COMPAT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/torchada/compat}"
venv="$cache/torch-$version"
stamp="$venv/.torchada-compat"
# The editable install points at this checkout, so the stamp names it as well as the extras.
want="torch==$version $repo $(sha256sum "$repo/pyproject.toml" "$repo/tools/install_venv.sh" "$repo/tools/heavy_test_libraries.sh" | cut -c1-16 | tr -d '\n')"
mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  bash "$repo/tools/install_venv.sh" "$venv" "$version" "torchada setup (once per torch version):"
  echo "$want" > "$stamp"
fi
if [ "${1:-}" = "--setup-only" ]; then
  echo "$venv"
  exit 0
fi
cd "$repo"
export PATH="$venv/bin:$PATH"
# From the installed metadata: importing a CUDA build of torch for the line takes seconds.
echo "compat.sh: torch $("$venv/bin/python" -c 'from importlib.metadata import version; print(version("torch"))')" >&2
exec python -m pytest -q "$@"
