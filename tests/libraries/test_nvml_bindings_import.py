"""GPU management bindings written as ``from ctypes import *`` import with torchada on (issue 42).

Moore Threads' ``pymtml`` (mthreads-ml-py) and NVIDIA's ``pynvml`` (nvidia-ml-py), both pinned in
the test extra, start with a star import of ctypes, which binds ``ctypes``'s whole namespace, read
through torchada's ctypes proxy. Both ways in are tried: ``import torchada`` first, and the runner
(``python -m torchada.run --simulate``). Nothing is initialised (no GPU library is loaded).
``import torch`` itself imports ``pynvml`` when it is installed (torch.cuda's ``_HAS_PYNVML``), so
before torchada; a vendored copy of it, loaded after, checks the star import's values.
"""

from __future__ import annotations

import importlib.util

import pytest
from conftest import run_cuda_program

BINDINGS = ("pymtml", "pynvml")

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in BINDINGS),
    reason="mthreads-ml-py and nvidia-ml-py are not installed (pip install -e .[test])",
)

PROGRAM = """
import ctypes
import importlib.util
import sys
from ctypes import *

c_uint  # bound by the star import
import pymtml
import pynvml  # torch's own torch.cuda may have imported it already, before torchada

# A vendored copy (vLLM's third_party/pynvml.py) is first imported after torchada: run pynvml's
# source again under another name, as such a copy would be.
spec = importlib.util.spec_from_file_location("vendored_pynvml", pynvml.__file__)
vendored = sys.modules["vendored_pynvml"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vendored)

assert "__torchada_original__" in vars(ctypes), "ctypes is not torchada's proxy"
for module in (pymtml, vendored):
    # The bindings see the names the proxy resolves: torchada's translating CDLL.
    assert module.CDLL is ctypes.CDLL, (module, module.CDLL)
    assert module.c_uint is ctypes.c_uint
assert ctypes.CDLL.__module__.startswith("torchada"), ctypes.CDLL
print("IMPORTED", pymtml.__name__, pynvml.__name__, vendored.__name__)
"""


@pytest.mark.parametrize("way", ["import", "runner"])
def test_bindings_import_with_torchada_on(way, tmp_path):
    script = tmp_path / "bindings.py"
    script.write_text(PROGRAM)
    done = run_cuda_program(way, str(script), workdir=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "IMPORTED pymtml pynvml vendored_pynvml" in done.stdout
