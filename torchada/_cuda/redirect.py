"""Builds the ``torch.cuda`` proxies from the registry (tables/torch_cuda.json).

A name resolves, in order: its registry entry (renamed, filled, unsupported, original, submodule);
the same name on the MUSA module; for private names, torch's own ``torch.cuda`` attribute. A public
name found nowhere raises an AttributeError that says torch_musa lacks it.
"""

from __future__ import annotations

import functools
import importlib
import logging
from types import ModuleType
from typing import Any, Callable, Dict, Mapping, Optional

from torchada_hooks import ProxyModule

from .._core import tables as _tables
from .._core import usage as _usage
from .._core.tables import ABSENT, ModuleSpec, NameRule
from . import device_args as _device_args

logger = logging.getLogger("torchada")

# Module tables, in installation order; each maps module names to what they resolve to.
MODULE_TABLES = (
    "torch_cuda",
    "torch_distributed",
    "ctypes_modules",
    "torch_cpp_extension",
)


class UnsupportedCUDAAPIError(NotImplementedError):
    """A CUDA API with no MUSA counterpart: the message says why and what to use instead."""


class UnsupportedCUDAAttributeError(AttributeError):
    pass


@functools.lru_cache(maxsize=1)
def load_table() -> Dict[str, ModuleSpec]:
    """Every proxied module, by name, from the module tables (checked as they load)."""
    modules: Dict[str, ModuleSpec] = {}
    for table in MODULE_TABLES:
        for name, spec in _tables.load(table).modules.items():
            if name in modules:
                raise ValueError(f"{name} is described twice in torchada/tables")
            modules[name] = spec
    return modules


def original_module(name: str) -> ModuleType:
    """Module ``name`` as torch (or Python) defines it, also while a proxy stands in for it.

    Example::

        >>> original_module("torch.cuda.jiterator")._create_jit_fn  # doctest: +SKIP
    """
    module = importlib.import_module(name)
    return vars(module).get("__torchada_original__") or module


def _import_ref(ref: str) -> Any:
    """``"pkg.mod:attr"`` -> the attribute; ``"attr"`` is looked up by the caller."""
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


def _unsupported_message(api: str, why: str, instead: str) -> str:
    return f"{api} is unsupported on MUSA: {why}. Instead, {instead}."


def _unsupported_callable(api: str, why: str, instead: str, as_class: bool = False) -> Callable:
    message = _unsupported_message(api, why, instead)
    if as_class:
        # A class stays a class (isinstance checks answer False) but cannot be instantiated.
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            _usage.record(api, "unsupported")
            raise UnsupportedCUDAAPIError(message)

        return type(
            api.rsplit(".", 1)[-1],
            (),
            {"__new__": __new__, "__doc__": message, "__torchada_unsupported__": message},
        )

    def unsupported(*args: Any, **kwargs: Any) -> Any:
        _usage.record(api, "unsupported")
        raise UnsupportedCUDAAPIError(message)

    unsupported.__name__ = api.rsplit(".", 1)[-1]
    unsupported.__qualname__ = unsupported.__name__
    unsupported.__doc__ = message
    unsupported.__torchada_unsupported__ = message
    return unsupported


class Redirector:
    """Makes one resolver per proxied module; holds the originals it falls back to."""

    def __init__(
        self,
        originals: Dict[str, Optional[ModuleType]],
        table: Optional[Mapping[str, ModuleSpec]] = None,
        notes: bool = True,
    ):
        # ``table``: another module table than the proxied modules' (torch._C's bindings).
        table = load_table() if table is None else table
        # Whether resolving a name counts as the program using it (the report); not for rows
        # resolved all at once at installation (torch._C's bindings count their calls).
        self.notes = notes
        # The table's modules this torch lacks (not in ``originals``): neither redirected nor
        # named as submodules, as on CUDA with the same torch.
        self.absent = {name for name in table if name not in originals}
        self.table = {name: spec for name, spec in table.items() if name not in self.absent}
        self.originals = originals

    def _target(self, module_name: str) -> Optional[ModuleType]:
        target = self.table[module_name].target
        if target == "@original":  # an overlay: torch's (or Python's) own module plus overrides
            return self.originals[module_name]
        return importlib.import_module(target) if target else None

    def resolve(self, module_name: str, attr: str) -> Any:
        value = self._resolve(module_name, attr)
        if attr in _device_args.table().get(module_name, ()):
            original = self.originals.get(module_name)
            value = _device_args.wrap(module_name, attr, value, getattr(original, attr, None))
        if _usage.enabled():
            entry = self.table[module_name].names.get(attr)
            kind = entry.kind if entry else self._default_kind(module_name)
            if kind not in ("submodule", "unsupported"):
                return _usage.wrap(f"{module_name}.{attr}", kind, value)
        return value

    def _default_kind(self, module_name: str) -> str:
        # A module whose target is one of torchada's fills (nvtx, profiler, ...) is filled whole.
        target = self.table[module_name].target or ""
        return "filled" if target.startswith("torchada.") else "same"

    def _resolve(self, module_name: str, attr: str) -> Any:
        spec = self.table[module_name]
        api = f"{module_name}.{attr}"
        entry = spec.names.get(attr)
        if entry is not None:
            return self._resolve_entry(module_name, attr, entry)
        if spec.target is None:
            why, instead = spec.unsupported  # type: ignore[misc]  # the schema pairs it with None
            original = self.originals.get(module_name)
            value = getattr(original, attr, None) if original is not None else None
            # The module's own functions and classes (jiterator's API is underscore-named).
            if callable(value) and getattr(value, "__module__", None) == module_name:
                _usage.note(api, "unsupported")
                return _unsupported_callable(api, why, instead, isinstance(value, type))
            raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")
        target = self._target(module_name)
        if hasattr(target, attr):
            _usage.note(api, self._default_kind(module_name))
            return getattr(target, attr)
        original = self.originals.get(module_name)
        public_api = getattr(original, "__all__", ()) or ()
        if original is not None and hasattr(original, attr) and attr not in public_api:
            # Private helpers and the module's own imports (os, warnings, ...): torch's own.
            return getattr(original, attr)
        if original is not None and hasattr(original, attr):
            _usage.note(api, "unsupported")
            raise UnsupportedCUDAAttributeError(
                f"{api} has no MUSA counterpart: torch_musa lacks it and torchada does not "
                "fill it yet. Please report it with the program that needs it."
            )
        raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")

    def _lacks(self, module_name: str, attr: str, entry: NameRule) -> bool:
        """Whether a registry row names what this torch lacks (a submodule or an unsupported
        name of a newer torch): absent then, as on CUDA with this torch."""
        if entry.kind == "submodule":
            return entry.module in self.absent
        original = self.originals.get(module_name)
        return entry.kind == "unsupported" and original is not None and not hasattr(original, attr)

    def _resolve_entry(self, module_name: str, attr: str, entry: NameRule) -> Any:
        kind = entry.kind
        api = f"{module_name}.{attr}"
        if self.notes:
            _usage.note(api, kind)
        if kind == "renamed":
            to = entry.to
            return _import_ref(to) if ":" in to else getattr(self._target(module_name), to)
        if kind == "filled":
            if entry.value is not ABSENT:
                return entry.value
            impl = _import_ref(entry.impl)
            if entry.lazy:
                import wrapt

                # Computing it would touch the device: defer until the value is really used.
                return wrapt.LazyObjectProxy(impl)
            return impl() if entry.call else impl
        if kind == "original":
            return getattr(self.originals[module_name], attr)
        if self._lacks(module_name, attr, entry):
            raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")
        if kind == "submodule":
            return importlib.import_module(entry.module)
        if kind == "unsupported":
            original = self.originals.get(module_name)
            value = getattr(original, attr, None) if original is not None else None
            if value is not None and not callable(value):
                raise UnsupportedCUDAAttributeError(
                    _unsupported_message(api, entry.why, entry.instead)
                )
            as_class = isinstance(value, type)
            return _unsupported_callable(api, entry.why, entry.instead, as_class)
        raise ValueError(f"registry entry {api} has unknown kind {kind!r}")

    def names(self, module_name: str) -> Callable[[], list]:
        def provider() -> list:
            spec = self.table[module_name]
            original = self.originals.get(module_name)
            names = {n for n, e in spec.names.items() if not self._lacks(module_name, n, e)}
            if original is not None:
                names.update(getattr(original, "__all__", ()) or ())
            if spec.target:
                names.update(n for n in dir(self._target(module_name)) if not n.startswith("__"))
            return sorted(names)

        return provider

    def all_names(self, module_name: str) -> list:
        """Every name the proxy should carry once sealed: the provider's names plus torch's own
        private ones (torch code reads ``torch.cuda._lazy_init`` and friends)."""
        names = set(self.names(module_name)())
        original = self.originals.get(module_name)
        if original is not None:
            names.update(n for n in vars(original) if not (n.startswith("__") and n.endswith("__")))
        return sorted(names)

    def build(self, module_name: str) -> ProxyModule:
        spec = self.table[module_name]
        original = self.originals.get(module_name)
        attrs: Dict[str, Any] = {
            "__doc__": f"{module_name} redirected to MUSA by torchada (see torchada.tables).",
            "__torchada_original__": original,
        }
        if original is not None and getattr(original, "__all__", None) is not None:
            attrs["__all__"] = list(original.__all__)
        if original is not None and getattr(original, "__file__", None):
            attrs["__file__"] = original.__file__
        # A package on this torch is one through the proxy too (torch.cuda.amp), so that its
        # submodules not imported yet can still be imported below it.
        package = spec.package or getattr(original, "__path__", None) is not None
        if package:
            attrs["__path__"] = list(getattr(original, "__path__", []) or [])
        if original is not None:
            # Module dunders the proxy never resolves (it leaves dunders to what is pre-set):
            # ctypes.__version__ and friends read as on the original.
            own = vars(original)
            copied = ("__cached__", "__version__", "__annotations__")
            attrs.update((k, own[k]) for k in copied if k in own)
        from torchada_hooks.proxy import peek_from

        # torchada's bookkeeping peeks at its proxies (__torchada_original__): reading their
        # namespace must not resolve every name, as whole-namespace readers get it.
        peek_from("torchada")
        proxy = ProxyModule(
            module_name,
            functools.partial(self.resolve, module_name),
            # Everything the module will carry (vars(), dir(), star imports list the original's
            # names plus torchada's), the same names a seal resolves.
            names=functools.partial(self.all_names, module_name),
            attrs=attrs,
            is_package=package,
        )
        return proxy
