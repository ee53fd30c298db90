"""Checkpoints a CUDA program writes under torchada: storages on the MUSA device are tagged
"cuda:N", so the file loads with plain torch on a CPU-only machine (map_location as a string, a
dict keyed "cuda:N", or a function) and back onto MUSA under torchada; older "musa:N" files still
load; TORCHADA_CHECKPOINT_LOCATION=musa keeps torch_musa's tags; disable() gives them back."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

FORMATS = pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
SIM = {"TORCHADA_SIMULATE": "1"}


def _save(obj, legacy=False) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


def _load(data: bytes, **kwargs):
    return torch.load(io.BytesIO(data), **kwargs)


def _tags(data: bytes) -> list:
    """The location tags of ``data``'s storages, in the order torch restores them."""
    seen: list = []
    _load(data, map_location=lambda storage, location: seen.append(location), weights_only=True)
    return seen


def _state():
    # Built inside each test: the module fixture has torchada on by then.
    return {
        "w": torch.arange(4.0, device="cuda:1"),
        "b": torch.full((2,), 7.0, device="cuda"),
        "n": torch.ones(3),
    }


def _plain_torch(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with no torchada switch set: plain CPU torch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHADA_")}
    prelude = (
        "import sys, json, torch\n"
        "assert 'torchada' not in sys.modules and 'torch_musa' not in sys.modules\n"
        "assert not torch.cuda.is_available()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module", autouse=True)
def on(torchada_on):
    from torchada._torch import checkpoints as _checkpoints

    assert _checkpoints.location_style() == "cuda"


def _musa_tagged(legacy=False) -> bytes:
    """A checkpoint as torch_musa writes it without torchada (tags "musa:N")."""
    import torchada

    torchada.disable()
    try:
        return _save({"w": torch.arange(4.0, device="musa:1")}, legacy)
    finally:
        assert torchada.enable()


# ---------------------------------------------------------------- what is written
@FORMATS
def test_storages_on_the_device_are_tagged_cuda(legacy):
    assert _tags(_save(_state(), legacy)) == ["cuda:1", "cuda:0", "cpu"]


def test_a_storage_is_tagged_cuda():
    from torch.serialization import location_tag

    assert location_tag(torch.ones(1, device="cuda:1").untyped_storage()) == "cuda:1"
    assert location_tag(torch.ones(1, device="musa:0").untyped_storage()) == "cuda:0"
    assert location_tag(torch.ones(1).untyped_storage()) == "cpu"
    assert location_tag(torch.ones(1, device="meta").untyped_storage()) == "meta"


# ---------------------------------------------------------------- plain torch on a CPU machine
@FORMATS
def test_plain_cpu_torch_loads_the_file(tmp_path, legacy):
    path = tmp_path / "ckpt.pt"
    path.write_bytes(_save(_state(), legacy))
    r = _plain_torch(
        f"""
        path = {str(path)!r}
        out = {{}}
        def record(name, state):
            out[name] = {{k: [str(v.device), v.tolist()] for k, v in state.items()}}
        record("str", torch.load(path, map_location="cpu"))
        record("device", torch.load(path, map_location=torch.device("cpu"), weights_only=True))
        record("dict", torch.load(path, map_location={{"cuda:0": "cpu", "cuda:1": "cpu"}}))
        seen = []
        def to_cpu(storage, location):
            seen.append(location)
            return storage if location.startswith("cuda") else None
        record("function", torch.load(path, map_location=to_cpu, weights_only=True))
        out["seen"] = seen
        try:
            torch.load(path)
        except RuntimeError as err:
            out["no_map_location"] = str(err)
        print(json.dumps(out))
        """
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    want = {"w": ["cpu", [0.0, 1.0, 2.0, 3.0]], "b": ["cpu", [7.0, 7.0]], "n": ["cpu", [1.0] * 3]}
    for name in ("str", "device", "dict", "function"):
        assert out[name] == want, name
    assert out["seen"] == ["cuda:1", "cuda:0", "cpu"]
    # Without map_location plain torch looks for the CUDA device, as for any CUDA checkpoint.
    assert out["no_map_location"].startswith(
        "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False"
    )


# ---------------------------------------------------------------- back under torchada
@FORMATS
@pytest.mark.parametrize("weights_only", [True, False], ids=["weights_only", "full"])
def test_loads_back_onto_the_device(legacy, weights_only):
    state = _state()
    loaded = _load(_save(state, legacy), weights_only=weights_only)
    assert loaded["w"].device == torch.device("musa", 1)
    assert loaded["b"].device == torch.device("musa", 0)
    assert loaded["n"].device == torch.device("cpu")
    for key, value in state.items():
        assert loaded[key].device.type == value.device.type
        assert torch.equal(loaded[key].cpu(), value.cpu())


@pytest.mark.parametrize(
    "map_location, w_device, b_device",
    [
        ("cuda:1", "musa:1", "musa:1"),
        (torch.device("cpu"), "cpu", "cpu"),
        ({"cuda:1": "cpu"}, "cpu", "musa:0"),
        ({"cuda:0": "cuda:1", "cuda:1": "cuda:0"}, "musa:0", "musa:1"),
        (lambda storage, location: storage if location == "cuda:0" else None, "musa:1", "cpu"),
    ],
    ids=["str", "device", "dict-cpu", "dict-swap", "function"],
)
def test_map_location_is_honoured(map_location, w_device, b_device):
    loaded = _load(_save(_state()), map_location=map_location, weights_only=True)
    assert str(loaded["w"].device) == w_device and str(loaded["b"].device) == b_device
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and loaded["b"].tolist() == [7.0, 7.0]


# ---------------------------------------------------------------- older "musa:N" checkpoints
def _respelled(location: str) -> str:
    kind, _, index = location.partition(":")
    return {"cuda": "musa", "musa": "cuda"}[kind] + ":" + index


@FORMATS
def test_old_musa_checkpoint_still_loads(legacy):
    data = _musa_tagged(legacy)
    assert _tags(data) == ["musa:1"]
    loaded = _load(data, weights_only=True)["w"]
    assert loaded.device == torch.device("musa", 1)
    assert loaded.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert _load(data, map_location="cuda:0")["w"].device == torch.device("musa", 0)


@pytest.mark.parametrize(
    "map_location, expected",
    [
        ({"musa:1": "cpu"}, "cpu"),
        ({"cuda:1": "cpu"}, "cpu"),  # the program's own key: the same device, CUDA's spelling
        ({"cuda:1": "cpu", "musa:1": "cuda:0"}, "musa:0"),  # a key the dict has wins
        ({"cuda:0": "cpu"}, "musa:1"),  # another device: no match, as in torch
    ],
    ids=["musa-key", "cuda-key", "exact-key-first", "other-device"],
)
def test_map_location_dicts_match_either_spelling(map_location, expected):
    assert str(_load(_musa_tagged(), map_location=map_location)["w"].device) == expected
    # And the other way round: code written for torch_musa, keyed on "musa:N".
    cuda_tagged = _save({"w": torch.ones(2, device="cuda:1")})
    swapped = {_respelled(key): value for key, value in map_location.items()}
    assert str(_load(cuda_tagged, map_location=swapped)["w"].device) == expected


# ---------------------------------------------------------------- the switch and disable()
@pytest.mark.parametrize(
    "env, style, tag",
    [
        ({"TORCHADA_CHECKPOINT_LOCATION": "musa"}, "musa", "musa:1"),
        ({"TORCHADA_CHECKPOINT_LOCATION": " CUDA "}, "cuda", "cuda:1"),
        ({"TORCHADA_DISABLE_CHECKPOINTS": "1"}, None, "musa:1"),
        ({"TORCHADA_DISABLE_DEVICES": "1"}, None, "musa:1"),
    ],
    ids=["musa", "cuda", "subsystem-off", "devices-off"],
)
def test_switch_and_subsystem_choose_the_tag(py, env, style, tag):
    r = py(
        """
        import io, torchada, torch
        from torch.serialization import location_tag
        from torchada._torch import checkpoints as _checkpoints
        t = torch.arange(3.0, device="musa:1")
        buf = io.BytesIO()
        torch.save(t, buf)
        buf.seek(0)
        back = torch.load(buf)
        print(_checkpoints.location_style(), location_tag(t.untyped_storage()), back.device,
              back.tolist())
        """,
        env={**SIM, **env},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().split(maxsplit=2) == [str(style), tag, "musa:1 [0.0, 1.0, 2.0]"]


def test_a_bad_switch_value_names_the_variable_and_its_choices(py):
    r = py("import torchada", env={**SIM, "TORCHADA_CHECKPOINT_LOCATION": "nvidia"})
    assert r.returncode != 0
    assert (
        "ValueError: TORCHADA_CHECKPOINT_LOCATION='nvidia' is not valid: use one of 'cuda', 'musa'"
        in r.stderr
    )


def test_disable_restores_torch_musa_tagging():
    import torch.serialization as ser

    import torchada
    from torchada._torch import checkpoints as _checkpoints

    storage = torch.ones(1, device="musa:1").untyped_storage()
    torch_dicts = ser._get_restore_location
    assert torch_dicts.__module__ == "torchada._torch.checkpoints"
    torchada.disable()
    try:
        assert ser.location_tag(storage) == "musa:1"
        assert _checkpoints.location_style() is None
        assert ser._get_restore_location.__module__ == "torch.serialization"
        assert not any(entry[1] is _checkpoints._cuda_tag for entry in ser._package_registry)
        assert _tags(_save({"w": torch.ones(1, device="musa:1")})) == ["musa:1"]
    finally:
        assert torchada.enable()
    assert ser.location_tag(storage) == "cuda:1"
    assert [entry[1] for entry in ser._package_registry].count(_checkpoints._cuda_tag) == 1
