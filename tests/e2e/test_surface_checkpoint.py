"""Activation checkpointing of CUDA-written code on MUSA: recomputation draws the same dropout
masks, because torch sees the device as initialized (torch_musa 2.7.1's own `_initialized` is a
copy taken at import and stays False; 2.11.0.post2 reads it live)."""

from __future__ import annotations

import types

import pytest
import torch
from conftest import sim_release
from torch.utils.checkpoint import checkpoint

import torchada

pytestmark = pytest.mark.usefixtures("torchada_on")


def _dropout_times_three(x):
    return torch.nn.functional.dropout(x, 0.5) * 3


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointed_dropout_recomputes_the_same_mask(reentrant):
    x = torch.ones(256, device="cuda", requires_grad=True)
    assert torch.musa._initialized is True and torch.musa.is_initialized()
    y = checkpoint(_dropout_times_three, x, use_reentrant=reentrant)
    y.sum().backward()
    assert x.grad.device.type == "musa"
    # y = mask * x * 2 * 3, so dy/dx is 6 exactly where the forward kept an element.
    assert torch.equal(x.grad.cpu(), y.detach().cpu())
    assert 0 < int((y != 0).sum()) < 256


def test_checkpointed_block_trains_like_the_plain_block():
    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.Dropout(0.2), torch.nn.GELU(), torch.nn.Linear(32, 16)
    ).cuda()
    x = torch.randn(8, 16, device="cuda")
    grads = []
    for use_checkpoint in (False, True):
        block.zero_grad()
        torch.cuda.manual_seed(3)
        out = checkpoint(block, x, use_reentrant=False) if use_checkpoint else block(x)
        out.square().mean().backward()
        grads.append([p.grad.clone() for p in block.parameters()])
    for plain, ckpt in zip(*grads):
        assert torch.equal(plain.cpu(), ckpt.cpu())


def test_disable_restores_torch_musa_module():
    musa = torch.musa
    torchada.disable()
    try:
        assert type(musa) is types.ModuleType
        # torch_musa 2.7.1's own copy, taken at import; 2.11.0.post2 reads it live.
        live = sim_release()[1]["live_initialized"]
        assert musa._initialized is (musa.is_initialized() if live else False)
    finally:
        assert torchada.enable()
    assert musa._initialized is True
    assert type(musa) is types.ModuleType  # a plain module: attribute reads keep the fast path


def test_initialized_follows_the_device_in_a_fresh_process(py):
    r = py(
        """
        import torch, torchada
        before = (torch.musa._initialized, torch.musa.is_initialized())
        torch.ones(1, device="cuda")  # the first allocation initializes the device
        print(before, (torch.musa._initialized, torch.musa.is_initialized()))
        """,
        env={"TORCHADA_SIMULATE": "1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[-2] == "(False, False) (True, True)"
