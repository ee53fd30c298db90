"""Device translation: both implementations, and what is specific to each. Every test here runs a
fresh interpreter: which path serves "cuda" is decided once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A CUDA build of torch keeps its own 'cuda' device: the native translation refuses to register
# there and the Python path serves "cuda" (as torchada says when it starts).
CUDA_BUILD = bool(torch.version.cuda)
needs_native_translation = pytest.mark.skipif(
    CUDA_BUILD, reason="this torch is built with CUDA: no native device translation"
)

PRELUDE = """
import json, logging, sys
import torch
import torch.utils._device
import torchada
from torchada import _simulator
from torchada._devices import install as _devices
from torchada._native import library as _native
"""


def _run(py, code, native=True, env=None, timeout=300):
    full_env = {"TORCHADA_NATIVE": "1" if native else "0", "TORCHADA_ACTIVE": ""}
    full_env.update(env or {})
    proc = py(PRELUDE + textwrap.dedent(code), env=full_env, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None, proc


def test_behaviour_suite_on_the_other_path():
    # This process ran test_devices_behaviour.py on one path; run it again on the other.
    from torchada._native import library as _native

    other = "0" if _native.requested() else "1"
    env = dict(os.environ)
    for name in ("TORCHADA_SIMULATE", "TORCHADA_ACTIVE", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    env["TORCHADA_NATIVE"] = other
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            os.path.join("tests", "devices", "test_devices_behaviour.py"),
        ],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_install_and_undo(py, native):
    out, _ = _run(
        py,
        """
        _simulator.activate()  # torch_musa patches Tensor.to itself: compare with that
        before = {
            "to": torch.Tensor.to, "cuda": torch.Tensor.cuda, "Generator": torch.Generator,
            "empty": torch.empty, "new_zeros": torch.Tensor.new_zeros,
            "storage_new": torch.UntypedStorage.__new__,
            "ctx_init": torch.utils._device.DeviceContext.__init__,
        }
        registry = list(torch.serialization._package_registry)
        c_to = torch._C.TensorBase.to
        # torch_musa's Tensor.to is Python and ends in Tensor.orig_to, torch's C method.
        wrapper = torch.Tensor.to
        assert wrapper is not c_to and torch.Tensor.orig_to is c_to
        assert torchada.enable()
        r = {"path": _devices.path(), "state": _native.state()["status"],
             "hook_taken": torch.Tensor.to is wrapper and torch.Tensor.orig_to is not c_to,
             "empty_wrapped": hasattr(torch.empty, "__wrapped__"),
             "device_is_torch": torch.device is torch._C.device,
             "empty_is_torch": torch.empty is torch._C._VariableFunctions.empty}
        lib = sys.modules.get("torchada_native")
        if lib is not None:
            r["registered"] = lib.device_translation_registered()
            r["enabled"] = lib.device_translation_enabled()
        torchada.disable()
        now = {
            "to": torch.Tensor.to, "cuda": torch.Tensor.cuda, "Generator": torch.Generator,
            "empty": torch.empty, "new_zeros": torch.Tensor.new_zeros,
            "storage_new": torch.UntypedStorage.__new__,
            "ctx_init": torch.utils._device.DeviceContext.__init__,
        }
        r["restored"] = sorted(k for k in before if before[k] is now[k])
        r["hook_restored"] = torch.Tensor.orig_to is c_to
        r["registry_restored"] = torch.serialization._package_registry == registry
        r["path_after"] = _devices.path()
        if lib is not None:
            r["enabled_after"] = lib.device_translation_enabled()
        assert torchada.enable()  # a second round installs again, registering nothing new
        r["again"] = str(torch.zeros(1).cuda(1).device)
        if lib is not None:
            r["enabled_again"] = lib.device_translation_enabled()
        print(json.dumps(r))
    """,
        native=native,
    )
    translates = native and not CUDA_BUILD
    assert out["path"] == ("native" if translates else "python")
    assert out["state"] == ("loaded" if native else "off")
    assert out["restored"] == sorted(
        ["to", "cuda", "Generator", "empty", "new_zeros", "storage_new", "ctx_init"]
    )
    assert out["registry_restored"] and out["path_after"] is None and out["hook_restored"]
    # Natively, torch_musa's Python Tensor.to stays and only its final C call is replaced.
    assert out["hook_taken"] is translates
    assert out["again"] == "musa:1"
    if translates:
        # No Python between a factory and the dispatcher; torch.device is torch's own class.
        assert not out["empty_wrapped"] and out["empty_is_torch"] and out["device_is_torch"]
        assert out["registered"] and out["enabled"]
        assert out["enabled_after"] is False and out["enabled_again"] is True
    else:
        assert out["empty_wrapped"] and out["device_is_torch"]
        if native:  # loaded, but refused to register on a CUDA build
            assert not out["registered"] and not out["enabled"]
        else:
            assert "registered" not in out  # TORCHADA_NATIVE=0 never even loads the library


@needs_native_translation
def test_native_kernels_per_operator_then_the_fallback_at_device_init(py):
    # Activation registers a kernel per operator with a Device argument (the list is kept in the
    # cache); the CUDA fallback, which rewrites every operator's dispatch table, waits for the
    # device to initialise. A factory reached without torch's Python arguments (torch.ops, code
    # compiled by Inductor) runs before that.
    code = """
        _simulator.activate()
        import torch_musa
        assert torchada.enable() and _devices.path() == "native"
        lib = sys.modules["torchada_native"]
        r = {"fallback_at_enable": lib.device_fallback_registered(),
             "initialized_at_enable": torch_musa.is_initialized()}
        idx = torch.ops.aten.tril_indices.default(3, 3, device="cuda")
        r["ops_device"] = str(idx.device)
        r["ops_values"] = idx.tolist()
        r["fallback_before_init"] = lib.device_fallback_registered()
        r["factory_device"] = str(torch.triu_indices(2, 2, device="cuda").device)
        r["fallback_after_init"] = lib.device_fallback_registered()
        r["initialized"] = torch_musa.is_initialized()
        print(json.dumps(r))
    """
    out, _ = _run(py, code)
    assert out == {
        "fallback_at_enable": False,
        "initialized_at_enable": False,
        "ops_device": "musa:0",
        "ops_values": [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]],
        "fallback_before_init": False,
        "factory_device": "musa:0",
        "fallback_after_init": True,
        "initialized": True,
    }
    from torchada._core.cache import cache_root

    assert list((cache_root() / "derived").glob("device-argument-ops-*.json"))


@needs_native_translation
def test_native_tensor_to_without_a_python_wrapper(py):
    # Where Tensor.to is torch's own C method (no torch_musa wrapper to hook), the native path
    # replaces it with a C method descriptor: same behaviour.
    out, _ = _run(
        py,
        """
        _simulator.activate()
        torch.Tensor.to = torch._C.TensorBase.to
        assert torchada.enable()
        y = torch.zeros(2, device="cuda")
        r = {"descriptor": type(torch.Tensor.to).__name__,
             "to": str(torch.ones(1).to("cuda:1").device),
             "kw": str(torch.ones(1).to(dtype=torch.float16, device="cuda:1").device),
             "alias": y.to("cuda") is y and y.to(torch.device("cuda", 0)) is y,
             "dtype": str(torch.ones(1).to(torch.float16).dtype),
             "many": str(torch.ones(1).to("cuda", torch.float16, False, True,
                                          memory_format=torch.preserve_format).device)}
        try:
            torch.ones(1).to("cuda:7")
        except RuntimeError as err:
            r["error"] = str(err)
        torchada.disable()
        r["restored"] = torch.Tensor.to is torch._C.TensorBase.to
        print(json.dumps(r))
    """,
    )
    assert out["descriptor"] == "method_descriptor"
    assert out["to"] == "musa:1" and out["kw"] == "musa:1" and out["many"] == "musa:0"
    assert out["alias"] and out["dtype"] == "torch.float16" and out["restored"]
    assert "'cuda:7'" in out["error"]


def test_native_build_bypasses_the_porting_front_end(py):
    # Once torchada is on, torch.utils.cpp_extension leads to the CUDA-porting front end; the
    # native library is built with torch's own (its CUDA references are deliberate).
    out, _ = _run(
        py,
        """
        _simulator.activate()
        assert torchada.enable()
        import torch.utils.cpp_extension
        from torchada._native import build as _build
        proxy = sys.modules["torch.utils.cpp_extension"]
        used = _build.torch_cpp_extension()
        print(json.dumps({"proxied": "__torchada_original__" in vars(proxy),
                          "used_is_original": used is vars(proxy)["__torchada_original__"],
                          "used_is_plain": "__torchada_original__" not in vars(used),
                          "unchanged": sys.modules["torch.utils.cpp_extension"] is proxy}))
    """,
    )
    assert out == {
        "proxied": True,
        "used_is_original": True,
        "used_is_plain": True,
        "unchanged": True,
    }


CALLS = """
CALLS = {
    "empty": lambda: torch.empty(1, device="cuda"),
    "zeros_like": lambda: torch.zeros_like(torch.ones(1), device="cuda"),
    "tril_indices": lambda: torch.tril_indices(2, 2, device="cuda"),
    "tensor": lambda: torch.tensor([1.0], device="cuda"),
    "to": lambda: torch.ones(1).to("cuda"),
    "cuda": lambda: torch.ones(1).cuda(),
    "Generator": lambda: torch.Generator("cuda"),
    "storage": lambda: torch.UntypedStorage(2, device="cuda"),
}
def outcomes():
    r = {}
    for name, call in CALLS.items():
        try:
            call()
            r[name] = ["ok", ""]
        except Exception as err:
            r[name] = [type(err).__name__, str(err)]
    return r
"""


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_disabled_fails_as_without_torchada(py, native):
    never, _ = _run(
        py,
        CALLS
        + textwrap.dedent(
            """
        _simulator.activate()
        print(json.dumps(outcomes()))
    """
        ),
        native=native,
    )
    after, _ = _run(
        py,
        CALLS
        + textwrap.dedent(
            """
        _simulator.activate()
        assert torchada.enable()
        assert str(torch.empty(1, device="cuda").device) == "musa:0"
        torchada.disable()
        print(json.dumps(outcomes()))
    """
        ),
        native=native,
    )
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in never.items()}
    if CUDA_BUILD:  # torch's own CUDA runtime answers, untouched, on either path
        assert after == never and after["empty"][0] == "RuntimeError"
        return
    assert after["empty"][0] == "NotImplementedError" and "'CUDA' backend" in after["empty"][1]
    assert "not linked with support for cuda devices" in after["to"][1]
    if native:  # the inert native pieces say why
        assert "torchada.disable()" in after["empty"][1]
        assert "torchada.disable()" in after["tril_indices"][1]
        assert "torchada.disable()" in after["to"][1]


def test_native_off_platform_registers_nothing(py):
    out, _ = _run(
        py,
        """
        lib = _native.load()
        r = {"loaded": lib is not None, "blocker": lib.device_translation_blocker(),
             "registered": lib.device_translation_registered(),
             "enabled": torchada.enable()}
        try:
            torch.empty(1, device="cuda")
        except Exception as err:
            r["empty"] = type(err).__name__
        print(json.dumps(r))
    """,
    )
    assert out["loaded"] and not out["registered"] and out["enabled"] is False
    # A CUDA build's own device guard is the first thing in the way; else, torch_musa's absence.
    want = "this PyTorch has CUDA support" if CUDA_BUILD else "torch_musa is not loaded"
    assert want in out["blocker"]
    assert out["empty"] in ("AssertionError", "RuntimeError", "NotImplementedError")


def test_build_failure_falls_back_to_python(py, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "broken.cpp").write_text("#error this library does not build\n")
    out, _ = _run(
        py,
        f"""
        from pathlib import Path
        records = []
        class Keep(logging.Handler):
            def emit(self, record):
                records.append(record.getMessage())
        logging.getLogger("torchada").addHandler(Keep())
        _simulator.activate()  # from the usual cache; the broken library builds elsewhere
        from torchada._native import build as _build
        _build.cache_root = lambda: Path({str(tmp_path / "cache")!r})
        _native.source_dir = lambda: Path({str(src)!r})
        assert torchada.enable()
        torchada.disable()
        assert torchada.enable()
        r = {{"path": _devices.path(), "state": _native.state(), "load": _native.load() is None,
             "device": str(torch.empty(1, device="cuda:1").device),
             "warnings": [m for m in records if "native library unavailable" in m]}}
        print(json.dumps(r))
    """,
    )
    assert out["path"] == "python" and out["device"] == "musa:1"
    assert out["state"]["status"] == "failed" and "broken" in out["state"]["reason"]
    assert out["load"]
    assert len(out["warnings"]) == 1  # once per process, not once per enable()


@pytest.mark.parametrize("native", ["1", "0"])
def test_cuda_is_musa_by_default_and_switch_keeps_torchs_answers(py, native):
    code = """
        _simulator.activate()
        assert torchada.enable()
        t = torch.empty(1, device="cuda")
        cuda0 = torch.device("cuda:0")
        state = {"musa": t.is_cuda, "cpu": torch.empty(1).is_cuda, "type": t.device.type,
                 "equal": t.device == cuda0, "hash": hash(t.device) == hash(cuda0),
                 "in_place": torch._has_compatible_shallow_copy_type(torch.ones(1), t)}
        torchada.disable()
        state["after_disable"] = [t.is_cuda, t.device == cuda0,
                                  torch._has_compatible_shallow_copy_type(torch.ones(1), t)]
        print(json.dumps(state))
    """
    env = {"TORCHADA_NATIVE": native}
    default, _ = _run(py, code, env=env)
    # The Python path cannot change torch.device's comparison (a C type); it says so once.
    equal = native == "1"
    assert default == {
        "musa": True,
        "cpu": False,
        "type": "musa",
        "equal": equal,
        "hash": equal,
        "in_place": True,
        "after_disable": [False, False, False],
    }
    honest, _ = _run(py, code, env={**env, "TORCHADA_CUDA_IS_MUSA": "0"})
    assert honest == {
        "musa": False,
        "cpu": False,
        "type": "musa",
        "equal": False,
        "hash": False,
        "in_place": True,
        "after_disable": [False, False, False],
    }


def test_child_processes_inherit_translation(py):
    out, _ = _run(
        py,
        """
        import subprocess
        _simulator.activate()
        assert torchada.enable()
        child = subprocess.run(
            [sys.executable, "-c",
             "import torch; print(torch.empty(1, device='cuda:1').device, "
             "torch.ones(1).cuda().device)"],
            capture_output=True, text=True, check=True)
        print(json.dumps({"child": child.stdout.strip()}))
    """,
    )
    assert out["child"] == "musa:1 musa:0"


def test_fallback_targets_cover_the_constructors():
    from torchada._devices import install as _devices

    targets = _devices.fallback_targets()
    for name in (
        "torch.empty",
        "torch.tensor",
        "torch.as_tensor",
        "torch.asarray",
        "torch.arange",
        "torch.randn",
        "torch.tril_indices",
        "torch.fft.fftfreq",
        "torch.nested.nested_tensor",
        "torch.zeros_like",
        "torch.randint_like",
        "torch.normal",
        "torch.Tensor.new_zeros",
        "torch.Tensor.new_tensor",
    ):
        assert name in targets, name
