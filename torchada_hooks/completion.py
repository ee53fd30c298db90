"""Run a callback when a module that is being imported right now has finished importing.

A ``torch.backends`` entry point can run while the package that brought torch in is still
executing its own ``__init__`` (``import torch_musa`` as a program's first line imports torch,
whose entry points then see a half-initialised ``torch_musa``). Work that needs the finished
module must wait for the end of that import, which has no public hook.

The import system marks a module under import with ``module.__spec__._initializing = True`` and
resets it to False in a ``finally`` once the module's code has run (CPython 3.4+, ``importlib``'s
``_load_unlocked``). :func:`when_imported` listens for exactly that reset by giving the one spec
object a subclass whose ``_initializing`` is a property; the spec gets its own class back at once.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, List

__all__ = ["is_importing", "when_imported"]

_lock = threading.Lock()


def is_importing(name: str) -> bool:
    """Whether ``name`` is in ``sys.modules`` but its own code has not finished running.

    Example::

        >>> import json
        >>> is_importing("json")
        False
    """
    module = sys.modules.get(name)
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def when_imported(name: str, callback: Callable[[], None]) -> bool:
    """Call ``callback()`` as soon as module ``name`` has finished importing.

    Returns True when it was called at once (``name`` is fully imported already), False when it
    waits for the import under way to end. A module that is neither imported nor importing is an
    error (LookupError): nothing would ever call back. Exceptions from a deferred callback
    propagate from the ``import`` statement that was finishing, as an import error of that module
    would. If that import fails, the callback is dropped along with the module.

    Example::

        >>> import json
        >>> when_imported("json", lambda: print("json is ready"))
        json is ready
        True
    """
    module = sys.modules.get(name)
    if module is None:
        raise LookupError(f"when_imported({name!r}): {name!r} is neither imported nor importing")
    spec = getattr(module, "__spec__", None)
    if not is_importing(name):
        callback()
        return True
    with _lock:
        pending: "List[Callable[[], None]] | None" = getattr(spec, "_when_imported_callbacks", None)
        if pending is not None:
            pending.append(callback)
            return False
        own_class = type(spec)
        state = {"initializing": True}

        def get(self):  # noqa: ANN001
            return state["initializing"]

        def set_(self, value) -> None:  # noqa: ANN001
            state["initializing"] = value
            if value:
                return
            # The import is over: restore the plain spec first, so that callbacks (and anything
            # they import) see an ordinary module.
            self.__class__ = own_class
            vars(self).pop("_initializing", None)
            self._initializing = False
            callbacks = vars(self).pop("_when_imported_callbacks", [])
            if sys.modules.get(self.name) is None:
                return  # the import failed; its own error is on its way
            for fn in callbacks:
                fn()

        listening = type(own_class.__name__, (own_class,), {"_initializing": property(get, set_)})
        vars(spec)["_when_imported_callbacks"] = [callback]
        spec.__class__ = listening
    return False
