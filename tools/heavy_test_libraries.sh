#!/usr/bin/env bash
# Installs the test suite's heavy training libraries beside a pinned torch:
#   tools/heavy_test_libraries.sh PYTHON TORCH_VERSION [NOTE] [deepspeed]
# With "deepspeed" last, DeepSpeed alone (CI's minimal install, .ci/minimal_install).
# DeepSpeed ships only a source archive whose build imports torch, so it cannot be an extra of
# pyproject.toml: pip would build it in an isolated environment and fetch the newest torch there.
# Built here without isolation, against the torch already installed (pinned again, so nothing
# moves it); DS_BUILD_OPS=0 compiles none of its CUDA ops. setuptools 80.9.0 builds both and fits
# every torch tested (torch 2.11/2.12 require setuptools<82, torch 2.13 >=77.0.3). Megatron-core
# 0.16.1 is the last release for Python 3.11. One of tools/install_venv.sh's steps: one line
# (beginning with NOTE) says what it installs; pip shows its progress on a terminal only.
set -euo pipefail
py="$1"
torch_version="$2"
note="${3:-torchada setup (once):}"
libraries=("deepspeed==0.19.8" "megatron-core==0.16.1")
what="DeepSpeed and Megatron-core"
if [ "${4:-}" = deepspeed ]; then libraries=("${libraries[0]}"); what=DeepSpeed; fi
if [ -t 1 ]; then pip_output=--progress-bar=on; else pip_output=-q; fi
echo "$note installing $what for the tests (a source build)..." >&2
DS_BUILD_OPS=0 "$py" -m pip install "$pip_output" --disable-pip-version-check --no-build-isolation \
  "setuptools==80.9.0" "${libraries[@]}" "torch==$torch_version"
