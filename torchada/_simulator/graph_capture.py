"""Graph capture of the simulated torch_musa (what its C module does for MUSAGraph): a dispatch
mode that records every ATen call made while capturing, kept outside the ``torch_musa`` namespace.
"""

import threading

import torch
import torch.utils._python_dispatch
import torch.utils._pytree

capturing = threading.local()
pool_counter = [0]


def tensors(value):
    return [t for t in torch.utils._pytree.tree_flatten(value)[0] if isinstance(t, torch.Tensor)]


def storage_key(t):
    return t.untyped_storage().data_ptr()


class Recorder(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.created = set()  # storages allocated by captured calls
        self.saved = {}  # storage -> (byte view of it, its contents before the capture)
        self.lock = threading.Lock()  # autograd's device threads record too

    def _written(self, func, args, kwargs):
        for i, arg in enumerate(func._schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            yield from tensors(value)

    def _save(self, t):
        key = storage_key(t)
        if key == 0 or key in self.created or key in self.saved:
            return
        whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        self.saved[key] = (whole, whole.clone())

    def restore(self):
        with torch.no_grad():
            for whole, before in self.saved.values():
                whole.copy_(before)
        self.saved.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._local_scalar_dense.default:
            raise RuntimeError(
                "MUSA error: operation not permitted when stream is capturing "
                "(a host synchronisation such as .item() was called during graph capture)"
            )
        with self.lock:
            for t in self._written(func, args, kwargs):
                self._save(t)
            inputs = {storage_key(t) for t in tensors((args, kwargs))}
        out = func(*args, **kwargs)
        with self.lock:
            for t in tensors(out):
                key = storage_key(t)
                if key not in inputs:
                    self.created.add(key)
            self.ops.append((func, args, kwargs, out))
        return out
