"""Every public function and class (and every public method of those classes) has a docstring
that says what it does and carries an ``Example::`` block, and the examples not marked
``# doctest: +SKIP`` run as written.

The public surface: ``torchada.__all__``, ``torchada.porting.__all__``, and the public functions
and classes of ``torchada.op_overrides``, ``torchada.run``, ``torchada.utils.cpp_extension`` and
the ``torchada_hooks`` modules.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import io
import sys
from typing import Any, Dict, List, Tuple

import pytest

PACKAGES = ("torchada", "torchada.porting")
MODULES = (
    "torchada.op_overrides",
    "torchada.run",
    "torchada.utils.cpp_extension",
    "torchada_hooks.completion",
    "torchada_hooks.finder",
    "torchada_hooks.hooks",
    "torchada_hooks.proxy",
    "torchada_hooks.swap",
)
# Public values rather than functions or classes: they have no docstring of their own.
CONSTANTS = {"torchada.CUDA_HOME", "torchada.__version__", "torchada.porting.MUSA_SUFFIXES"}
PROJECT = ("torchada", "torchada_hooks")


def _ours(obj: Any) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in PROJECT


def _callable_of(value: Any) -> Any:
    """The function behind a class attribute (method, property, static/class method, a wrapt
    decorator), or None for anything else."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    value = inspect.unwrap(value) if callable(value) else value
    return value if inspect.isfunction(value) else None


def _methods(qualname: str, cls: type) -> List[Tuple[str, Any]]:
    """Public methods (and properties) ``cls`` defines itself, not those it inherits."""
    out = []
    for name, value in vars(cls).items():
        function = None if name.startswith("_") else _callable_of(value)
        if function is not None and _ours(function):
            out.append((f"{qualname}.{name}", function))
    return out


def _public_surface() -> List[Tuple[str, Any]]:
    """(qualified name, object) of every public function, class and method, in a stable order."""
    entries: List[Tuple[str, Any]] = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for name in package.__all__:
            qualname = f"{package_name}.{name}"
            if qualname not in CONSTANTS:
                entries.append((qualname, getattr(package, name)))
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        exported = set(getattr(module, "__all__", ()))
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            # Defined here, or re-exported on purpose (op_overrides re-exports _cpp_ops).
            if _ours(obj) and (obj.__module__ == module_name or name in exported):
                entries.append((f"{module_name}.{name}", obj))
    surface = []
    for qualname, obj in entries:
        surface.append((qualname, obj))
        if inspect.isclass(obj):
            surface.extend(_methods(qualname, obj))
    return surface


SURFACE = _public_surface()
# One entry per object for running the examples (is_cuda_like_device is is_gpu_device).
_UNIQUE: Dict[int, Tuple[str, Any]] = {}
for _qualname, _obj in SURFACE:
    _UNIQUE.setdefault(id(_obj), (_qualname, _obj))
EXAMPLES = sorted(_UNIQUE.values(), key=lambda entry: entry[0])


def test_surface_is_walked():
    names = {qualname for qualname, _ in SURFACE}
    for package_or_module in PACKAGES + MODULES:
        assert any(n.startswith(package_or_module + ".") for n in names), package_or_module
    # Methods of project classes are part of it, wrapped ones (wrapt.synchronized) included.
    assert "torchada_hooks.hooks.ImportHooks.register" in names
    assert "torchada.porting.FileReport.changed" in names
    not_code = [n for n, obj in SURFACE if not (inspect.isroutine(obj) or inspect.isclass(obj))]
    assert not not_code, f"neither function nor class (add them to CONSTANTS?): {not_code}"


def test_every_public_name_has_an_example():
    missing = []
    for qualname, obj in SURFACE:
        doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
        summary, marker, _ = inspect.cleandoc(doc).partition("Example::")
        if not marker or not summary.strip():
            missing.append(qualname)
    assert not missing, (
        f"{len(missing)} public names lack a docstring that says what they do and has an "
        "'Example::' block:\n  " + "\n  ".join(missing)
    )


@pytest.mark.parametrize("qualname, obj", EXAMPLES, ids=[q for q, _ in EXAMPLES])
def test_examples_run(qualname: str, obj: Any):
    module = sys.modules[obj.__module__]
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(verbose=False)
    report = io.StringIO()
    for test in finder.find(obj, qualname, module=module, globs=vars(module)):
        runner.run(test, out=report.write)
    assert runner.failures == 0, f"examples of {qualname} fail:\n{report.getvalue()}"
