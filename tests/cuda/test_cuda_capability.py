"""The compute capability CUDA code is told on MUSA (tables/cuda_capability.json): the CUDA one
whose features the board has, MUSA's own inside the capability callers of nvidia_callers.json
(tests/cuda/test_cuda_available.py checks each row) and with TORCHADA_CUDA_CAPABILITY=musa."""

from __future__ import annotations

import json
import os

import pytest
import torch
from conftest import REPO, run_cuda_program

from torchada._core import tables as _tables
from torchada._cuda import capability as _capability
from torchada._extensions.build_settings import translate_arch_list
from torchada._simulator.boards import BOARDS

ARCHES = _tables.load("cuda_capability").architectures
FOR_CUDA = _capability.answers_for_cuda()

pytestmark = pytest.mark.usefixtures("torchada_on")


def _row_of(musa):
    return next(row for row in ARCHES if row.musa == tuple(musa))


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_every_simulated_board_has_its_row(board):
    spec = BOARDS[board]
    row = _row_of(spec["capability"])
    assert spec["name"] in row.boards
    assert _capability.cuda_capability(spec["capability"]) == row.cuda


@pytest.mark.parametrize("row", ARCHES, ids=[r.arch for r in ARCHES])
def test_each_answer_follows_its_features_and_builds_its_own_architecture(row):
    cuda, f = row.cuda, row.features
    assert f.fp16 == (cuda[0] >= 7)  # tensor-core fp16: Volta
    assert f.bf16 == f.tf32 == (cuda >= (8, 0))  # Ampere
    assert f.fp8 == (cuda >= (8, 9))  # Ada
    # An extension built for the answer (TORCH_CUDA_ARCH_LIST, -gencode) is built for this
    # architecture, through the porter's threshold rows.
    assert translate_arch_list("%d.%d+PTX" % cuda) == "%d%d" % row.musa
    assert row.exact or "No CUDA capability matches" in row.note


def test_newer_and_older_architectures():
    newest = ARCHES[-1]
    assert _capability.cuda_capability((newest.musa[0], newest.musa[1] + 1)) == newest.cuda
    with pytest.warns(UserWarning, match=r"MUSA architecture 1\.0 is older than every row"):
        assert _capability.cuda_capability((1, 0)) == (1, 0)
    assert _capability.cuda_arch_list(["21", "22", "22", "31", "x"]) == [
        "sm_70",
        "sm_80",
        "sm_90",
        "x",
    ]


def _cuda_code_asks():
    """What CUDA code is told: asked from a function that does not ask about MUSA itself (one
    that does is code with its own MUSA branch, told MUSA's own numbers: test_musa_branch.py)."""
    devices = ((), (0,), ("cuda:1",), (torch.device("cuda", 1),), (None,))
    props = torch.cuda.get_device_properties(0)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        torch.cuda.get_device_capability("cpu")
    return {
        "capabilities": {torch.cuda.get_device_capability(*device) for device in devices},
        "props": props,
        "multi_processor_count": torch.cuda.get_device_properties().multi_processor_count,
        "arch_list": torch.cuda.get_arch_list(),
    }


def test_cuda_code_is_told_the_cuda_capability():
    musa = torch.musa.get_device_capability()
    told = _capability.cuda_capability(musa) if FOR_CUDA else musa
    assert musa == (2, 2)  # the default S4000: MUSA's numbers stay torch_musa's
    asked = _cuda_code_asks()
    assert asked["capabilities"] == {told}
    props, musa_props = asked["props"], torch.musa.get_device_properties(0)
    assert (props.major, props.minor) == told
    assert (props.name, props.total_memory) == (musa_props.name, musa_props.total_memory)
    assert asked["multi_processor_count"] == 48
    if FOR_CUDA:
        assert repr(props).startswith("_CudaDeviceProperties(name='MTT S4000', major=8, minor=0")
    arches = torch.musa.get_arch_list()
    assert asked["arch_list"] == (_capability.cuda_arch_list(arches) if FOR_CUDA else arches)


def test_compiled_code_takes_the_boards_branch():
    import torch._dynamo.testing

    def step(x):
        major, _ = torch.cuda.get_device_capability()
        return x.sin() if major >= 8 else x.cos()

    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch.compile(step, backend=counter, fullgraph=True)
    x = torch.linspace(0, 1, 5, device="cuda")
    assert torch.equal(compiled(x), x.sin() if FOR_CUDA else x.cos())
    assert counter.frame_count == 1
    torch._dynamo.reset()


def test_disable_puts_torchs_own_functions_back():
    import torchada
    from torchada._cuda.redirect import original_module

    torchada.disable()
    try:
        for name in ("get_device_capability", "get_device_properties", "get_arch_list"):
            assert getattr(torch.cuda, name) is getattr(original_module("torch.cuda"), name)
    finally:
        assert torchada.enable()


@pytest.mark.parametrize("switch", [None, "cuda", "musa"])
def test_doctor_shows_both_numbers_and_which_is_in_force(switch, monkeypatch):
    from torchada._doctor import collect, render

    if switch is None:
        monkeypatch.delenv("TORCHADA_CUDA_CAPABILITY", raising=False)
    else:
        monkeypatch.setenv("TORCHADA_CUDA_CAPABILITY", switch)
    text = render(collect())
    in_force = switch or "cuda"
    assert f"MTT S4000 (capability 2.2, CUDA 8.0; {in_force} in force)" in text
    assert f"capability    {in_force}  (" in text
    if switch == "musa":
        assert "TORCHADA_CUDA_CAPABILITY=musa, as the published torchada answers" in text


# ------------------------------------------------------------------ whole programs
GATES = os.path.join(REPO, "tests", "e2e", "e2e_programs", "capability_gates_cuda.py")
# board: (the way in, bf16, grouped GEMM, FP8). Both ways in are covered across the boards.
EXPECTED = {
    "S80": ("runner", False, False, False),
    "S3000": ("import", False, False, False),
    "S4000": ("runner", True, True, False),
    "S5000": ("import", True, True, True),
}


@pytest.mark.parametrize("board", sorted(EXPECTED))
def test_capability_gates_take_the_path_the_board_runs(board, tmp_path):
    way, bf16, grouped, fp8 = EXPECTED[board]
    env = {"TORCHADA_SIM_BOARD": board}
    r = run_cuda_program(way, GATES, workdir=tmp_path, extra_env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    spec = BOARDS[board]
    cuda = list(_capability.cuda_capability(spec["capability"]))
    assert out["capability"] == cuda and out["properties"] == cuda + [spec["name"]]
    assert out["arch_list"] == ["sm_%d%d" % tuple(cuda)]
    assert out["gates"] == {"bf16": bf16, "fp16": True, "grouped_gemm": grouped, "fp8": fp8}
    # The Hugging Face model runs in the dtype its gate chose, on the GPU, as the CPU model does.
    dtype = "torch.bfloat16" if bf16 else "torch.float16"
    assert out["model_dtype"] == dtype and out["logits"] == [dtype, "musa"]
    assert out["max_abs_diff"] < (0.05 if bf16 else 0.01)
    # NVIDIA-only callers see the MUSA architecture: no Hopper TMA, no sm_XY PTX target.
    musa = "%d%d" % spec["capability"]
    nvidia = out["nvidia_only"]
    assert nvidia["cuda_interface"] == int(musa)
    assert not any(nvidia["tma"].values()) and nvidia["tma"]
    assert nvidia["has_triton"] is False
    assert nvidia["triton_target"] in (None, int(musa))


def test_the_published_numbers_on_request(tmp_path):
    env = {"TORCHADA_CUDA_CAPABILITY": "musa"}
    r = run_cuda_program("import", GATES, workdir=tmp_path, extra_env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["capability"] == [2, 2] and out["arch_list"] == ["22"]
    assert out["gates"] == {"bf16": False, "fp16": False, "grouped_gemm": False, "fp8": False}


def test_a_bad_switch_value_names_the_switch():
    with pytest.raises(ValueError, match="TORCHADA_CUDA_CAPABILITY"):
        _capability.answers_for_cuda({"TORCHADA_CUDA_CAPABILITY": "9.0"})
