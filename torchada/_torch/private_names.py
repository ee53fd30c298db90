"""Private torch names (bindings, module variables, functions) that real libraries and torch's own
code read, answered for MUSA.

- ``torch._C``'s private CUDA bindings (``_cuda_setStream``, ``_cuda_getCurrentRawStream``,
  ``_broadcast``, ...), one row each in tables/torch_c.json: torch_musa's binding, a fill, or
  unsupported with a reason. They are set on ``torch._C`` on every torch build (a CUDA build of
  torch has its own, which would reach for a CUDA device) and undone with torchada;
- ``torch._inductor.autotune_process.CUDA_VISIBLE_DEVICES``: the variable Inductor sets to pin
  each autotuning subprocess to one device, which on MUSA is ``MUSA_VISIBLE_DEVICES``;
- ``torch.nn.attention.flex_attention._validate_device``: FlexAttention accepts musa tensors.

``torch.cuda._is_compiled`` and ``torch.cuda._device_count_nvml`` are rows of the torch.cuda
table (tables/torch_cuda.json).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

import torch

from .._core.after_import import on_import

if TYPE_CHECKING:
    from .._core.patcher import Patcher

logger = logging.getLogger("torchada")

_state: dict = {"patcher": None}


def _patch_autotune(module: Any) -> None:
    _state["patcher"].set_attr(module, "CUDA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES")


def _patch_flex_attention(module: Any) -> None:
    validate = module._validate_device

    def _validate_device(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        # MUSA runs FlexAttention through the same compiled path as CUDA; torch checks the
        # device against a list of backends that predates PrivateUse1 support.
        if query.device.type == "musa":
            return None
        return validate(query, key, value)

    _state["patcher"].set_attr(module, "_validate_device", _validate_device)


def install_c_bindings(patcher: Any) -> None:
    """Serves each row of tables/torch_c.json on ``torch._C``: resolved at its first read (by a
    module ``__getattr__``, so rows a program never reads cost nothing), then set on the module,
    so later reads are plain attribute reads."""
    from .._core import tables as _tables
    from .._cuda.redirect import Redirector

    table = _tables.load("torch_c").modules
    # No original module: every row applies, whatever this build of torch binds itself.
    resolver = Redirector({"torch._C": None}, table=table, notes=False)
    pending = set()
    for name, row in table["torch._C"].names.items():
        # A CUDA build's own binding would reach for a CUDA device: out of the way, either for
        # the row's value or, for a row marked absent, for good (torch tests for it with
        # hasattr(), as in torch built without CUDA).
        patcher.del_attr(torch._C, name)
        if not row.absent:
            pending.add(name)
    _serve_lazily(patcher, torch._C, pending, lambda name: resolver.resolve("torch._C", name))
    musac = sys.modules.get("torch_musa._MUSAC")
    if musac is not None:
        # torch_musa's patch of torch/nn/parallel/comm.py calls the out= forms on _MUSAC, which
        # torch_musa does not define: torch.cuda.comm's out= arguments reach torchada's fills.
        outs = {
            n for n in ("_broadcast_out", "_scatter_out", "_gather_out") if not hasattr(musac, n)
        }
        _serve_lazily(patcher, musac, outs, lambda name: resolver.resolve("torch._C", name))


def _serve_lazily(patcher: Any, module: Any, names: set, resolve: Any) -> None:
    """``module.<name>`` for each of ``names`` is ``resolve(name)``, computed at its first read
    and then set on ``module`` through ``patcher`` (undone with torchada, as the module's
    ``__getattr__`` and ``__dir__`` are)."""
    if not names:
        return
    # Reentrant: resolving a row imports fill modules, which may read another row.
    lock = threading.RLock()
    label = module.__name__

    def __getattr__(name: str) -> Any:
        with lock:
            if name not in names:
                raise AttributeError(f"module {label!r} has no attribute {name!r}")
            try:
                value = resolve(name)
            except (AttributeError, ImportError) as err:
                # A torch_musa release without the binding a row names: that row alone stays
                # out, as if the name did not exist.
                names.discard(name)
                logger.warning("torchada: %s.%s is left out: %s", label, name, err)
                raise AttributeError(f"module {label!r} has no attribute {name!r}") from None
            names.discard(name)
            patcher.set_attr(module, name, value)
            return value

    def __dir__() -> list:
        return sorted(set(vars(module)) | names)

    patcher.set_attr(module, "__getattr__", __getattr__)
    patcher.set_attr(module, "__dir__", __dir__)


def install(patcher: Patcher) -> None:
    _state["patcher"] = patcher
    patcher.on_undo(lambda: _state.update(patcher=None))
    install_c_bindings(patcher)
    on_import("torch._inductor.autotune_process", _patch_autotune, _state)
    on_import("torch.nn.attention.flex_attention", _patch_flex_attention, _state)
