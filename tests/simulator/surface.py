"""Compares the simulator's importable surface with a real torch_musa release's.

The references, torch_musa_<release>_surface.json beside this file, were extracted from torch_musa's
source by tools/extract_surface.py without importing it (2.7.1 from tag v2.7.1; 2.9.1.post1 and
2.11.0.post2 from trees rebuilt out of the code index, each module's 'source' says from where): per
module, the names bound at import with their kind and, for functions and classes, parameters (kind,
name, default as written in the source). ``omitted.json`` in the simulator's package lists what the
simulator leaves out of each release, with why.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import types
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
# Names the reference cannot list: the C extension's (extracted as one "__cext__" marker).
NOT_LISTED = {"torch_musa._MUSAC"}


@dataclass
class Report:
    covered: List[str] = field(default_factory=list)
    not_importable: List[str] = field(default_factory=list)
    real_public: int = 0
    matched: int = 0
    missing: List[str] = field(default_factory=list)
    extra: List[str] = field(default_factory=list)
    signatures: List[Tuple[str, list, list]] = field(default_factory=list)


def reference_path(release: str = "2.7.1") -> str:
    return os.path.join(HERE, f"torch_musa_{release}_surface.json")


def reference(release: str = "2.7.1") -> dict:
    with open(reference_path(release), encoding="utf-8") as f:
        return json.load(f)["modules"]


def _signature(obj) -> Optional[list]:
    target = obj.__init__ if isinstance(obj, type) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if isinstance(obj, type) and params and params[0].name == "self":
        params = params[1:]
    out = []
    for p in params:
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        out.append([p.kind.name, p.name, default])
    return out


def _real_signature(entry: dict) -> Optional[list]:
    if entry["kind"] == "function":
        return [list(p) for p in entry.get("sig") or []]
    init = (entry.get("members") or {}).get("__init__")
    if init is None:
        return None
    sig = [list(p) for p in init.get("sig") or []]
    return sig[1:] if sig and sig[0][1] == "self" else sig


def _same_default(ours: Optional[str], theirs: Optional[str]) -> bool:
    if ours == theirs:
        return True
    if ours is None or theirs is None:
        return False
    # The source may spell a default differently from its repr ('a' vs "a", 10 * 60 vs 600).
    try:
        return repr(eval(theirs, {"torch": __import__("torch")})) == ours
    except Exception:
        return False


def compare(modules: Optional[Dict[str, dict]] = None, release: str = "2.7.1") -> Report:
    """Import every module of the release's reference (the simulator must be active, simulating
    that release) and compare."""
    modules = reference(release) if modules is None else modules
    report = Report()
    for name, entry in modules.items():
        try:
            module = importlib.import_module(name)
        except ImportError:
            report.not_importable.append(name)
            continue
        report.covered.append(name)
        if name in NOT_LISTED:
            continue
        ns = entry["ns"]
        replaced_by = entry.get("replaced_by")
        if replaced_by:
            # The module puts an instance of this class (torch.backends' PropModule trick) in its
            # place in sys.modules; the names it defines stay on the wrapped module, ``.m``.
            if type(module).__name__ != replaced_by:
                report.missing.append(f"{name} (as a {replaced_by})")
            module = getattr(module, "m", module)
        ours = {
            n: v for n, v in vars(module).items() if not (n.startswith("__") and n.endswith("__"))
        }
        for n, info in ns.items():
            if n.startswith("_") or info.get("incidental"):
                continue
            report.real_public += 1
            if n not in ours:
                report.missing.append(f"{name}.{n}")
                continue
            report.matched += 1
            if info["kind"] in ("function", "class"):
                real_sig, our_sig = _real_signature(info), _signature(ours[n])
                if real_sig is None or our_sig is None:
                    continue
                same = len(real_sig) == len(our_sig) and all(
                    a[0] == b[0] and a[1] == b[1] and _same_default(b[2], a[2])
                    for a, b in zip(real_sig, our_sig)
                )
                if not same:
                    report.signatures.append((f"{name}.{n}", real_sig, our_sig))
        for n, value in ours.items():
            if n in ns:
                continue
            # Modules a module imports for itself (sys, torch, ...) are not names it defines.
            if isinstance(value, types.ModuleType) and not value.__name__.startswith(
                ("torch_musa", "torch.musa")
            ):
                continue
            report.extra.append(f"{name}.{n}")
    return report
