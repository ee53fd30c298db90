"""torch.cuda.is_available() on MUSA: the device's answer by default, torch's own inside the
NVIDIA-only callers of tables/nvidia_callers.json (each row checked here), and the published
answer on request. CI also runs this file with TORCHADA_FORCE_CUDA_AVAILABLE=0 (``FOR_MUSA``
False): every answer is then torch's own."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading

import pytest
import torch
from conftest import REPO, run_cuda_program

from torchada._core import tables as _tables
from torchada._cuda import available as _available
from torchada._cuda.redirect import original_module

ALL_ROWS = _tables.load("nvidia_callers").callers
ROWS = [r for r in ALL_ROWS if "is_available" in r.questions]
CAPABILITY_ROWS = [r for r in ALL_ROWS if "capability" in r.questions]
FOR_MUSA = _available.answers_for_musa()
BRANCH = _available.musa_branch_rule()

pytestmark = pytest.mark.usefixtures("torchada_on")


ASK = "torch.cuda.is_available()"


def _asker(module: str, function: str, depth: int, ask: str = ASK):
    """A callable whose frame ``depth`` frames above ``ask`` (torch.cuda.is_available()) is
    ``function`` of ``module`` (``"<module>"``: module-level code), as the library's own code
    would be."""
    helpers = "".join(
        f"def _helper{i}():\n    return {f'_helper{i + 1}()' if i + 1 < depth else ask}\n"
        for i in range(1, depth)
    )
    call = "_helper1()" if depth > 1 else ask
    if function == "<module>":
        source = f"{helpers}answer = {call}\n"
        return lambda: _exec(source, module)["answer"]
    parts = function.split(".")
    lines, indent = [], ""
    for owner in parts[:-1]:  # Class.method: the method's qualname is the row's
        lines.append(f"{indent}class {owner}:")
        indent += "    "
    if len(parts) > 1:
        lines.append(f"{indent}@staticmethod")
    lines += [f"{indent}def {parts[-1]}():", f"{indent}    return {call}"]
    target = _exec(helpers + "\n".join(lines) + "\n", module)[parts[0]]
    for part in parts[1:]:
        target = getattr(target, part)
    return target


def _exec(source: str, module: str) -> dict:
    namespace = {"__name__": module, "torch": torch}
    exec(compile(source, f"<{module}>", "exec"), namespace)
    return namespace


def cuda_program_asks() -> bool:
    """``torch.cuda.is_available()`` asked the way a CUDA program asks: from a function that does
    not ask about MUSA itself (one that does is code with its own MUSA branch: see
    test_musa_branch.py)."""
    return torch.cuda.is_available()


def test_the_default_answer_is_the_devices():
    assert torch.musa.is_available() is True
    assert cuda_program_asks() is FOR_MUSA
    # This function asks about MUSA itself (torch.musa above), so it gets torch's own answer,
    # unless TORCHADA_MUSA_BRANCH=0.
    assert torch.cuda.is_available() is (FOR_MUSA and not BRANCH)
    # Not CUDA: version checks are not fooled (torch_musa runs on a CPU build, where it is None;
    # the CI's CUDA builds of older torches keep theirs).
    assert torch.version.cuda is None or "+cpu" not in torch.__version__
    assert original_module("torch.cuda").is_available() is False  # torch's own, on this build


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.module}:{r.function}" for r in ROWS])
def test_each_nvidia_caller_gets_torchs_own_answer(row):
    # A musa_branch row is code with its own MUSA branch, which TORCHADA_MUSA_BRANCH=0 gives
    # CUDA's answer like any CUDA code.
    applies = BRANCH or not row.musa_branch
    assert _asker(row.module, row.function, row.depth)() is (False if applies else FOR_MUSA)
    assert _available.nvidia_caller is not None
    if row.depth < 4:  # one frame further away, the row no longer applies
        assert _asker(row.module, row.function, row.depth + 1)() is FOR_MUSA
    assert _asker(row.module + "_elsewhere", row.function, 1)() is FOR_MUSA


CAPABILITY_ASKS = {
    "capability": "torch.cuda.get_device_capability()",
    "properties": "torch.cuda.get_device_properties(0).major",
    "arch_list": "torch.cuda.get_arch_list()",
}


@pytest.mark.parametrize(
    "row", CAPABILITY_ROWS, ids=[f"{r.module}:{r.function}" for r in CAPABILITY_ROWS]
)
@pytest.mark.parametrize("ask", sorted(CAPABILITY_ASKS))
def test_each_capability_caller_gets_musas_own_numbers(row, ask):
    from torchada._cuda.capability import answers_for_cuda, cuda_arch_list, cuda_capability

    musa = torch.musa.get_device_capability()  # (2, 2) here; CUDA code is told (8, 0)
    told = cuda_capability(musa) if answers_for_cuda() else musa
    if ask == "properties":
        musa, told = musa[0], told[0]
    elif ask == "arch_list":
        musa = torch.musa.get_arch_list()
        told = cuda_arch_list(musa) if answers_for_cuda() else musa
    code = CAPABILITY_ASKS[ask]
    applies = BRANCH or not row.musa_branch
    assert _asker(row.module, row.function, row.depth, code)() == (musa if applies else told)
    if row.depth < 4:
        assert _asker(row.module, row.function, row.depth + 1, code)() == told
    assert _asker(row.module + "_elsewhere", row.function, 1, code)() == told


def test_a_caller_elsewhere_gets_the_devices_answer():
    assert _asker("my_training_script", "pick_device", 1)() is FOR_MUSA
    assert _asker("__main__", "<module>", 1)() is FOR_MUSA


def test_answers_are_per_thread_and_per_call():
    # No shared state: a thread inside an NVIDIA-only caller never changes another's answer.
    if not ROWS:
        pytest.skip("the table has no rows")
    row = ROWS[0]
    nvidia = _asker(row.module, row.function, row.depth)
    results = {"nvidia": set(), "program": set()}
    barrier = threading.Barrier(4)

    def run(kind, fn):
        barrier.wait()
        for _ in range(300):
            results[kind].add(fn())

    threads = [
        threading.Thread(target=run, args=(kind, fn))
        for kind, fn in (("nvidia", nvidia), ("program", torch.cuda.is_available)) * 2
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"nvidia": {False}, "program": {FOR_MUSA}}


def test_disable_puts_torchs_own_function_back():
    import torchada

    served = torch.cuda.is_available
    if FOR_MUSA:
        assert served.__torchada_musa__ is torch.musa.is_available
    else:
        assert served is original_module("torch.cuda").is_available
    torchada.disable()
    try:
        assert torch.cuda.is_available is original_module("torch.cuda").is_available
        assert torch.cuda.is_available() is False
    finally:
        assert torchada.enable()
    assert cuda_program_asks() is FOR_MUSA


def test_a_bad_row_is_refused_when_the_table_loads(tmp_path):
    table = json.loads((_tables.TABLES_DIR / "nvidia_callers.json").read_text())
    table["callers"] = [{"module": "lib", "function": "f", "why": "w", "depth": 9}]
    path = tmp_path / "nvidia_callers.json"
    path.write_text(json.dumps(table))
    with pytest.raises(_tables.TableError, match=r"lib:f.*'depth'.*9 is outside 1..4"):
        _tables.load_file(path, "nvidia_callers")


@pytest.mark.parametrize(
    "questions, error",
    [
        (["is_avail"], r"lib:f.*'questions\[0\]'.*\"is_avail\" is not one of"),
        ([], r"'questions'.*empty"),
    ],
)
def test_a_row_names_known_questions(tmp_path, questions, error):
    table = json.loads((_tables.TABLES_DIR / "nvidia_callers.json").read_text())
    table["callers"] = [{"module": "lib", "function": "f", "why": "w", "questions": questions}]
    path = tmp_path / "nvidia_callers.json"
    path.write_text(json.dumps(table))
    with pytest.raises(_tables.TableError, match=error):
        _tables.load_file(path, "nvidia_callers")


def test_rows_answer_only_their_questions():
    # Every row of today's table is an is_available row unless it names others.
    for row in ROWS:
        assert row.questions, row
        assert set(row.questions) <= set(_tables.CALLER_QUESTIONS)
    assert _available.nvidia_caller(sys._getframe(), "capability") is None
    with pytest.raises(ValueError, match="'cap' is not one of"):
        _available.nvidia_caller(sys._getframe(), "cap")


def _imported_program(tmp_path, source: str):
    """What a program of a real library's use prints (its last line, a JSON list), run with
    ``import torchada`` first on the simulator."""
    prog = tmp_path / "library_cuda.py"
    prog.write_text(source)
    r = run_cuda_program("import", str(prog), workdir=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.skipif(
    importlib.util.find_spec("bitsandbytes") is None,
    reason="bitsandbytes is not installed (it is in the 'test' extra)",
)
def test_bitsandbytes_import_takes_its_cpu_backend_not_cuda_kernels(tmp_path):
    # Its import guard means NVIDIA's stack: told True it registers its CUDA kernels and picks
    # its CUDA backend. Inside it, torch's own answer; the program around it still sees the GPU.
    out = _imported_program(
        tmp_path,
        "import json, sys, torch\n"
        "import bitsandbytes\n"
        "from bitsandbytes import cextension\n"
        "print(json.dumps([torch.cuda.is_available(), cextension.BNB_BACKEND,\n"
        "                  'bitsandbytes.backends.cuda.ops' in sys.modules]))\n",
    )
    assert out == [FOR_MUSA, "CPU", False]


@pytest.mark.skipif(
    importlib.util.find_spec("triton") is None,
    reason="triton is not installed (CUDA builds of torch bring it; the CPU build does not)",
)
def test_tritons_nvidia_driver_stays_inactive(tmp_path):
    # Triton's NVIDIA backend counts itself active where CUDA is available, then builds its
    # launcher against libcuda: DeepSpeed's Triton ops failed at import. Inside its check, torch's
    # own answer (False without an NVIDIA GPU); the program still sees the MUSA device.
    available, active = _imported_program(
        tmp_path,
        "import json, torch\n"
        "from triton.backends import backends\n"
        "print(json.dumps([torch.cuda.is_available(),\n"
        "                  {name: b.driver.is_active() for name, b in backends.items()}]))\n",
    )
    assert available is FOR_MUSA and active["nvidia"] is False


def test_the_published_answer_on_request(tmp_path):
    # TORCHADA_FORCE_CUDA_AVAILABLE=0: False, as the published torchada answers; the same
    # program then chooses the CPU itself (its own choice, not an error).
    prog = os.path.join(REPO, "tests", "e2e", "e2e_programs", "auto_device_cuda.py")
    r = run_cuda_program(
        "import", prog, workdir=tmp_path, extra_env={"TORCHADA_FORCE_CUDA_AVAILABLE": "0"}
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads([x for x in r.stdout.splitlines() if x.startswith("{")][-1])
    assert out["is_available"] is False and out["device"] == "cpu"
    assert out["fp32"] == {"pinned": False, "devices": ["cpu"]}
    assert out["gpt_style"]["dtype"] == "float16" and out["gpt_style"]["param_device"] == "cpu"
    assert out["scaler"] == {"enabled": False, "scale": None}


def test_compiled_code_that_asks_is_available_takes_the_gpu_branch():
    # Dynamo evaluates the question at trace time, in one graph, as it does for CUDA's (it cannot
    # trace the look at the caller's frame); here Dynamo may have come before or after torchada.
    import torch._dynamo.testing

    def step(x):
        return x.sin() if torch.cuda.is_available() else x.cos()

    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(step, backend=counter, fullgraph=True)
    x = torch.linspace(0, 1, 5, device="cuda")
    expected = x.sin() if FOR_MUSA else x.cos()
    assert torch.equal(compiled(x), expected) and counter.frame_count == 1
    torch._dynamo.reset()


def test_compiled_is_available_folds_when_dynamo_came_before_torchada(py):
    code = """
import torch, torch._dynamo.testing
import torchada
def step(x):
    return x.sin() if torch.cuda.is_available() else x.cos()
counter = torch._dynamo.testing.CompileCounter()
compiled = torch.compile(step, backend=counter, fullgraph=True)
x = torch.ones(3, device="cuda")
print(torch.equal(compiled(x), x.sin() if torch.cuda.is_available() else x.cos()),
      counter.frame_count)
"""
    r = py(code, env={"TORCHADA_SIMULATE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split()[-2:] == ["True", "1"]


# ------------------------------------------------------------------ code with a MUSA branch
_BRANCHED = """
def is_musa():
    return torch.version.musa is not None
def get_device():
    if torch.cuda.is_available():
        return "cuda"
    return "musa" if is_musa() else "cpu"
def get_device_sm():
    if torch.cuda.is_available() or is_musa():
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    return 0
def pick_by_torch_musa():
    import torch_musa  # noqa: F401
    return torch.cuda.is_available()
def pick():
    return "cuda" if torch.cuda.is_available() else "cpu"
top_level = torch.cuda.is_available()
"""


def test_a_function_that_asks_about_musa_itself_gets_torchs_own_answers():
    from torchada._cuda.capability import answers_for_cuda, cuda_capability

    project = _exec(_BRANCHED, "some_project.utils")
    musa = torch.musa.get_device_capability()
    told = cuda_capability(musa) if answers_for_cuda() else musa
    if BRANCH:
        assert project["get_device"]() == "musa"
        assert project["get_device_sm"]() == musa[0] * 10 + musa[1]  # 22: MUSA's own
        assert project["pick_by_torch_musa"]() is False
    else:
        assert project["get_device"]() == ("cuda" if FOR_MUSA else "musa")
        assert project["get_device_sm"]() == told[0] * 10 + told[1]
        assert project["pick_by_torch_musa"]() is FOR_MUSA
    # CUDA code: a function that does not ask about MUSA, and module-level code.
    assert project["pick"]() == ("cuda" if FOR_MUSA else "cpu")
    assert project["top_level"] is FOR_MUSA


def test_what_counts_as_asking_about_musa():
    def names(source: str):
        return _available.asks_about_musa(compile(source, "<f>", "exec").co_consts[0])

    assert names("def f(): return torch.musa.is_available()") == "musa"
    assert names("def f(): import torch_musa") == "torch_musa"
    assert names("def f(): return is_musa_available()") == "is_musa_available"
    assert names("def f(x): return x.is_musa") == "is_musa"
    # Not a MUSA probe: importing torchada (how CUDA code turns it on), a string, other names.
    assert names("def f(): import torchada; return torch.cuda.is_available()") is None
    assert names("def f(x): return x.device.type == 'musa'") is None
    assert names("def f(): return FOR_MUSA or musa_props or answers_for_musa()") is None


def test_torchadas_own_code_is_not_a_musa_branch():
    own = _exec("def ask():\n    return torch.cuda.is_available(), torch.musa\n", "torchada.x")
    assert own["ask"]()[0] is FOR_MUSA
