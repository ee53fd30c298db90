"""``python -m torchada doctor``: what torchada sees on this machine, and what looks wrong."""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any, Dict, List

from ._core.env import flag, switches
from ._core.torch_features import left_out_pieces

OVERRIDE_OFF_PREFIX = "TORCHADA_DISABLE_OP_OVERRIDE_"

# What doctor prints: every declared switch (tables/switches.json) and what else decides devices.
SWITCHES = tuple(s.name for s in switches() if "<" not in s.name and not s.internal) + (
    "CUDA_VISIBLE_DEVICES",
    "MUSA_HOME",
    "TORCH_DEVICE_BACKEND_AUTOLOAD",
)


def collect() -> Dict[str, Any]:
    import torch

    import torchada
    from torchada import _activation, _simulator
    from torchada._core import platform as _platform

    info: Dict[str, Any] = {
        "torchada": torchada.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda_build": torch.version.cuda,
        "platform": _platform.detect_platform().value,
        "enabled": _activation.is_enabled(),
        "switches": {k: os.environ[k] for k in SWITCHES if k in os.environ},
        "switches_off": sorted(
            k
            for k in os.environ
            if k.startswith("TORCHADA_DISABLE_")
            and not k.startswith(OVERRIDE_OFF_PREFIX)
            and os.environ[k] == "1"
        ),
    }
    musa = sys.modules.get("torch_musa")
    info["torch_musa"] = getattr(musa, "__version__", None)
    info["simulated"] = _simulator.is_active()
    if musa is not None:
        count = musa.device_count()
        info["devices"] = [
            {
                "index": i,
                "name": musa.get_device_name(i),
                "capability": list(musa.get_device_capability(i)),
                "cuda_capability": list(_cuda_capability(musa.get_device_capability(i))),
            }
            for i in range(count)
        ]
    native = sys.modules.get("torchada._native.library")
    state = getattr(native, "state", None)
    info["native_library"] = state() if callable(state) else "not loaded"
    info["cache"] = _cache_state()
    info["native_build"] = _native_build()
    info["cuda_available"] = _cuda_available(info)
    info["cuda_capability"] = _capability_in_force(info)
    info["backend_name"] = _backend_name(info)
    info["op_overrides"] = _op_overrides(info)
    info["telemetry"] = _telemetry()
    info["graph_rotation"] = _graph_rotation(info)
    info["left_out"] = left_out_pieces()
    info["warnings"] = warnings_for(info)
    return info


def _cache_state() -> Dict[str, Any]:
    # The cache asked for, its owner and mode, whether torchada reads it, and the one in use.
    from torchada._core import cache as _cache

    out = _cache.describe(_cache.configured_root())
    out["in_use"] = str(_cache.cache_root())
    return out


def _native_build() -> Dict[str, Any]:
    # Whether the cache in use holds the native library's build for what is loaded now: a
    # container image built with `python -m torchada build` should say yes. Never builds.
    from torchada._native import library as _native

    return _native.cached_build()


def _cuda_available(info: Dict[str, Any]) -> Dict[str, Any]:
    """What ``torch.cuda.is_available()`` answers here, and why (the switch, or the platform)."""
    import torch

    from ._cuda.available import MUSA_BRANCH_SWITCH, answers_for_musa, musa_branch_rule

    raw = os.environ.get("TORCHADA_FORCE_CUDA_AVAILABLE")
    for_musa = answers_for_musa()
    if info["platform"] != "musa" or not info["enabled"]:
        why = "torch's own answer: torchada is not active on MUSA here"
    elif for_musa:
        why = "the MUSA device's answer (torch.musa.is_available()): " + (
            f"TORCHADA_FORCE_CUDA_AVAILABLE={raw}" if raw else "the default"
        )
        why += "; torch's own answer inside the NVIDIA-only callers (tables/nvidia_callers.json)"
        if musa_branch_rule():
            why += " and in code with its own MUSA branch (docs/musa_branch.md)"
        else:
            why += f"; {MUSA_BRANCH_SWITCH}=0: code with its own MUSA branch gets it too"
    else:
        why = (
            f"torch's own answer, False on MUSA: TORCHADA_FORCE_CUDA_AVAILABLE={raw} "
            "(--no-cuda-available), as the published torchada answers"
        )
    return {"answer": bool(torch.cuda.is_available()), "why": why}


def _cuda_capability(musa: Any) -> Any:
    from ._cuda.capability import cuda_capability

    return cuda_capability(tuple(musa))


def _capability_in_force(info: Dict[str, Any]) -> Dict[str, Any]:
    """Which capability ``torch.cuda.get_device_capability()`` answers here (the CUDA one or
    MUSA's own), and why."""
    from ._cuda.capability import SWITCH, answers_for_cuda

    raw = os.environ.get(SWITCH)
    if info["platform"] != "musa" or not info["enabled"]:
        return {"in_force": "torch", "why": "torch's own: torchada is not active on MUSA here"}
    if answers_for_cuda():
        why = "the CUDA capability with the board's features (tables/cuda_capability.json): "
        why += f"{SWITCH}={raw}" if raw else "the default"
        why += "; MUSA's own inside the NVIDIA-only capability callers (tables/nvidia_callers.json)"
        return {"in_force": "cuda", "why": why}
    return {
        "in_force": "musa",
        "why": f"torch_musa's own: {SWITCH}={raw}, as the published torchada answers",
    }


def _backend_name(info: Dict[str, Any]) -> Dict[str, Any]:
    """What ``dist.get_backend()`` answers for a group made as "nccl", and why."""
    from ._distributed.backend_name import SWITCH, active

    raw = os.environ.get(SWITCH)
    if info["platform"] != "musa" or not info["enabled"]:
        return {"answer": "nccl", "why": "torch's own answer: torchada is not active on MUSA here"}
    if active():
        why = "CUDA's name for MCCL: " + (f"{SWITCH}={raw}" if raw else "the default")
        why += "; torch's own inside the NVIDIA-only callers (tables/nvidia_callers.json)"
        return {"answer": "nccl", "why": why}
    if raw:
        why = f"torch's own answer, as the published torchada: {SWITCH}={raw}"
    else:
        why = "torch's own answer: TORCHADA_DISABLE_BACKEND_NAME"
    return {"answer": "mccl", "why": why}


def _graph_rotation(info: Dict[str, Any]) -> Dict[str, Any]:
    """CUDA graph executable rotation: on or off, its cap, and what it did in this process."""
    rotation = sys.modules.get("torchada._cuda.graph_rotation")
    if rotation is not None and rotation.stats()["cap"] is not None:
        return rotation.stats()
    why = "torchada off" if not info["enabled"] else "TORCHADA_GRAPH_ROTATION=0"
    return {"on": False, "why": why}


def _telemetry() -> Dict[str, Any]:
    """Whether MTML (the driver's libmtml, loaded as pymtml loads it) and its Python bindings
    (pymtml, from mthreads-ml-py) are found: torch.cuda's telemetry on MUSA needs both."""
    import ctypes
    import importlib.util
    from importlib import metadata

    out: Dict[str, Any] = {"libmtml": None, "pymtml": None}
    for name in ("libmtml.so.2", "libmtml.so"):
        try:
            ctypes.CDLL(name)
        except OSError as err:
            out.setdefault("libmtml_error", str(err))
            continue
        out["libmtml"] = name
        out.pop("libmtml_error", None)
        break
    if importlib.util.find_spec("pymtml") is not None:
        try:
            out["pymtml"] = "mthreads-ml-py " + metadata.version("mthreads-ml-py")
        except metadata.PackageNotFoundError:
            out["pymtml"] = "found"
    return out


def _op_overrides(info: Dict[str, Any]) -> Dict[str, Any]:
    # Reads what is there; never builds the native library.
    from torchada._native import library as _native
    from torchada._ops import overrides as _cpp_ops

    out: Dict[str, Any] = _cpp_ops.state()
    try:
        out["target_arch"] = _native.target_arch() if info.get("torch_musa") else None
    except ValueError as err:
        out["target_arch_error"] = str(err)
    out["musa_kernels"] = _native.plan([], _native.musa_sources()).musa_note()
    return out


def warnings_for(info: Dict[str, Any]) -> List[str]:
    from ._cuda.available import answers_for_musa

    env = info["switches"]
    out = []
    ops = info.get("op_overrides", {})
    if ops.get("target_arch_error"):
        out.append(ops["target_arch_error"])
    if flag("TORCHADA_SIMULATE", env) and info["torch_musa"] and not info["simulated"]:
        out.append("TORCHADA_SIMULATE is set but a real torch_musa is installed: it is ignored")
    if env.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0":
        out.append(
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0: child processes (torchrun workers, spawn, "
            "DataLoader workers) will not turn torchada on by themselves"
        )
    if info["platform"] == "musa":
        from ._devices.visible import problem

        visible = problem(env)
        if visible is not None:
            out.append(visible)
    if info["torch_cuda_build"] and info["torch_musa"]:
        out.append(
            f"torch is a CUDA build ({info['torch_cuda_build']}) and torch_musa is loaded: "
            "torch_musa expects a CPU build of torch"
        )
    cache = info.get("cache", {})
    if cache and not cache["trusted"]:
        out.append(
            f"the cache {cache['path']} is {cache['why']} (owner {cache['owner']}, mode "
            f"{cache['mode']}): torchada does not read it and uses {cache['in_use']}; make it "
            "yours and writable by you alone (chmod -R go-w), or set TORCHADA_CACHE_DIR"
        )
    if flag("TORCHADA_DISABLE", env) and env.get("TORCHADA_ACTIVE"):
        out.append("TORCHADA_DISABLE wins over TORCHADA_ACTIVE: nothing is installed")
    if info["platform"] == "musa" and not answers_for_musa(env):
        out.append(
            "TORCHADA_FORCE_CUDA_AVAILABLE=0: torch.cuda.is_available() is False, so programs "
            "that ask it before choosing a device run on the CPU"
        )
    if info["platform"] != "musa":
        out.append(f"platform is {info['platform']}: torchada installs nothing here")
    return out


def render(info: Dict[str, Any]) -> str:
    lines = [
        f"torchada {info['torchada']}  (python {info['python']}, torch {info['torch']}"
        + (f", CUDA {info['torch_cuda_build']}" if info["torch_cuda_build"] else "")
        + ")",
        f"platform      {info['platform']}  (torchada {'on' if info['enabled'] else 'off'})",
        "torch_musa    "
        + (
            f"{info['torch_musa']}" + (" (simulated)" if info["simulated"] else "")
            if info["torch_musa"]
            else "not loaded"
        ),
    ]
    in_force = info["cuda_capability"]["in_force"]
    for dev in info.get("devices", []):
        musa, cuda_cap = dev["capability"], dev["cuda_capability"]
        lines.append(
            f"  musa:{dev['index']}      {dev['name']} (capability {musa[0]}.{musa[1]}, "
            f"CUDA {cuda_cap[0]}.{cuda_cap[1]}; {in_force} in force)"
        )
    cuda = info["cuda_available"]
    lines.append(f"cuda avail.   {cuda['answer']}  ({cuda['why']})")
    lines.append(f"capability    {in_force}  ({info['cuda_capability']['why']})")
    name = info["backend_name"]
    lines.append(f"nccl group    get_backend() is {name['answer']!r}  ({name['why']})")
    lines.append(f"native lib    {info['native_library']}")
    cache = info.get("cache")
    if cache:
        if not cache["exists"]:
            lines.append(f"cache         {cache['path']} (not made yet)")
        else:
            verdict = "trusted" if cache["trusted"] else f"NOT trusted ({cache['why']})"
            lines.append(
                f"cache         {cache['path']} (owner {cache['owner']}, mode {cache['mode']}): "
                + verdict
                + ("" if cache["in_use"] == cache["path"] else f"; using {cache['in_use']}")
            )
    build = info.get("native_build")
    if build:
        if build["built"]:
            lines.append(f"native build  built, in {build['path']}")
        else:
            where = f" (in {build['path']})" if "path" in build else f": {build['reason']}"
            lines.append(
                f"native build  not built{where}; the first use builds it, `python -m torchada "
                "build` does it ahead of time"
            )
    lines.extend(_render_op_overrides(info["op_overrides"]))
    tele = info.get("telemetry")
    if tele:
        lines.append(
            "telemetry     MTML "
            + (f"{tele['libmtml']} found" if tele["libmtml"] else "libmtml not found")
            + ", pymtml "
            + (tele["pymtml"] or "not found (pip install mthreads-ml-py)")
        )
    graphs = info.get("graph_rotation") or {}
    if graphs.get("on"):
        lines.append(
            f"cuda graphs   rotation on, cap {graphs['cap']} live executables "
            f"(TORCHADA_GRAPH_EXEC_CAP): {graphs['live']} live, {graphs['captured']} captured, "
            f"{graphs['evicted']} evicted, {graphs['reinstantiated']} re-instantiated"
        )
    elif graphs:
        lines.append(f"cuda graphs   rotation off ({graphs.get('why', 'not available here')})")
    if info["switches"]:
        lines.append("environment   " + ", ".join(f"{k}={v}" for k, v in info["switches"].items()))
    if info["switches_off"]:
        lines.append("subsystems off " + ", ".join(info["switches_off"]))
    for piece, feature in info.get("left_out", {}).items():
        lines.append(f"left out      {piece} (this torch has no {feature})")
    overrides_off = sorted(k for k in os.environ if k.startswith(OVERRIDE_OFF_PREFIX))
    if overrides_off:
        lines.append("overrides off " + ", ".join(overrides_off))
    for w in info["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def _render_op_overrides(ops: Dict[str, Any]) -> List[str]:
    if ops["installed"]:
        state = ", ".join(
            f"{name} ({entry['op']}, {entry.get('calls', 0)} calls)"
            for name, entry in sorted(ops["installed"].items())
        )
    elif ops["requested"] and not ops["active"]:
        state = "requested, not installed (torchada is off or not on MUSA)"
    elif ops["requested"]:
        state = "requested, none installed"
    else:
        state = "off (TORCHADA_ENABLE_CPP_OPS=1 installs torchada's own)"
    lines = [f"op overrides  {state}"]
    for name, why in sorted(ops["left_out"].items()):
        lines.append(f"  left out    {name} ({why})")
    if ops["extensions"]:
        lines.append("  extensions  " + ", ".join(ops["extensions"]))
    arch = ops.get("target_arch")
    lines.append(f"MUSA target   {arch or 'unknown'}")
    lines.append(f"MUSA kernels  {ops['musa_kernels']}")
    return lines


HELP = """usage: python -m torchada doctor [--json]

Lists the versions (torchada, python, torch, torch_musa), the platform and its devices, the
switches set (TORCHADA_* and the like), the native library and operator overrides, and the pieces
this torch leaves out; then warns about what looks wrong. Builds nothing.

options:
  -h, --help  show this help message and exit
  --json      print the report as JSON

Examples:
  python -m torchada doctor
  TORCHADA_SIMULATE=1 python -m torchada doctor --json
"""


def main(argv: List[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(HELP, end="")
        return 0
    unknown = [a for a in argv if a != "--json"]
    if unknown:
        print(f"python -m torchada doctor: unknown argument {unknown[0]!r}", file=sys.stderr)
        return 2
    info = collect()
    print(json.dumps(info, indent=1) if "--json" in argv else render(info))
    return 0
