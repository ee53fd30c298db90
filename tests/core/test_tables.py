"""The data tables (torchada/tables/*.json): each follows its declared schema, and a table that does
not fails as it is loaded, with a message naming the table, the entry and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchada._core import tables as _tables
from torchada._core.tables import TableError

TABLES = sorted(p.stem for p in _tables.TABLES_DIR.glob("*.json"))


def test_every_table_has_a_schema():
    assert TABLES and set(TABLES) == set(_tables.SCHEMAS)


@pytest.mark.parametrize("name", TABLES)
def test_every_table_loads_and_validates(name):
    table = _tables.load(name)
    assert isinstance(table, _tables.SCHEMAS[name]) and table.doc
    assert _tables.load(f"{name}.json") is table  # read once


def test_rows_are_typed_and_read_like_their_json():
    entry = _tables.load("torch_cuda").modules["torch.cuda"].names["CudaError"]
    assert isinstance(entry, _tables.NameRule)
    assert (entry.kind, entry.to) == ("renamed", "MusaError")
    assert entry["kind"] == "renamed" and entry.get("impl") is None and "impl" not in entry
    with pytest.raises(KeyError):
        entry["value"]  # left out of the JSON


def test_tables_are_read_together_except_the_switches(tmp_path, monkeypatch):
    # One cached value holds every table activation reads; the switches, read by every check of
    # an environment variable, are read alone, and so are the NVIDIA-only callers, read when a
    # program first asks torch.cuda.is_available(). A fresh cache: each table is parsed once.
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path))
    parsed = []
    real = _tables.load_file
    monkeypatch.setattr(
        _tables, "load_file", lambda path, stem: parsed.append(stem) or real(path, stem)
    )
    _tables._cached_tables.cache_clear()
    try:
        assert [s.name for s in _tables.load("switches").switches][:1]
        assert parsed == ["switches"]
        assert _tables.load("torch_cuda").modules["torch.cuda"].names["CUDAGraph"].to == "MUSAGraph"
        alone = {"switches", "nvidia_callers", "cuda_capability"}
        assert sorted(parsed) == sorted(set(_tables.SCHEMAS) - alone | {"switches"})
        assert _tables.load("libraries.json") is _tables.load("libraries")
        assert _tables.load("nvidia_callers").callers is not None
        assert _tables.load("cuda_capability").architectures  # when a capability is first asked
        assert sorted(parsed) == sorted(_tables.SCHEMAS)
        assert set(_tables._ON_THEIR_OWN) == alone
        cached = sorted(p.name.split("-")[0] for p in (tmp_path / "derived").iterdir())
        assert cached == ["table", "table", "table", "tables"]
        with pytest.raises(TableError, match="no_such_table"):
            _tables.load("no_such_table")
    finally:
        _tables._cached_tables.cache_clear()


def _copy(tmp_path: Path, name: str, change) -> Path:
    data = json.loads((_tables.TABLES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_misspelled_kind_fails_at_load(tmp_path):
    def misspell(data):
        data["modules"]["torch.cuda"]["names"]["CudaError"]["kind"] = "renamd"

    path = _copy(tmp_path, "torch_cuda", misspell)
    with pytest.raises(TableError) as info:
        _tables.load_file(path, "torch_cuda")
    error = info.value
    assert (error.table, error.field) == ("torch_cuda", "kind")
    assert error.entry == 'modules["torch.cuda"].names["CudaError"]'
    message = str(error)
    for part in ("torch_cuda", 'names["CudaError"]', "'kind'", '"renamd"', '"renamed"'):
        assert part in message


@pytest.mark.parametrize(
    "name, change, entry, field",
    [
        (
            "torch_cuda",
            lambda d: d["modules"]["torch.cuda"]["names"]["CudaError"].pop("to"),
            'modules["torch.cuda"].names["CudaError"]',
            "to",
        ),
        (
            "torch_cuda",
            lambda d: d["modules"]["torch.cuda"]["names"]["CudaError"].update(tpo="x"),
            'modules["torch.cuda"].names["CudaError"]',
            "tpo",
        ),
        (
            "torch_cuda",
            lambda d: d["modules"]["torch.cuda"].update(package="yes"),
            'modules["torch.cuda"]',
            "package",
        ),
        (
            "switches",
            lambda d: d["switches"][0].update(kind="flga"),
            "switches[0] (TORCHADA_DISABLE)",
            "kind",
        ),
        (
            "cuda_build",
            lambda d: d["nvcc_flags"][0].update(mcc=3),
            "nvcc_flags[0] (--expt-relaxed-constexpr)",
            "mcc",
        ),
        (
            "cuda_device_params",
            lambda d: d["modules"]["torch.cuda"].update(Stream="device"),
            "",
            'modules["torch.cuda"]["Stream"]',
        ),
    ],
)
def test_a_bad_entry_names_table_entry_and_field(tmp_path, name, change, entry, field):
    path = _copy(tmp_path, name, change)
    with pytest.raises(TableError) as info:
        _tables.load_file(path, name)
    assert (info.value.table, info.value.entry, info.value.field) == (name, entry, field)
    assert str(path) in str(info.value)


def test_the_redirect_registry_is_checked_when_loaded(tmp_path, monkeypatch):
    # The registry's reader goes through the loader: a bad row fails at load_table(), before any
    # name is resolved.
    from torchada._cuda import redirect as _redirect

    def misspell(data):
        data["modules"]["torch.cuda"]["names"]["CudaError"]["kind"] = "renamd"

    broken = tmp_path / "tables"
    broken.mkdir()
    for table in _redirect.MODULE_TABLES:
        source = _tables.TABLES_DIR / f"{table}.json"
        (broken / source.name).write_bytes(source.read_bytes())
    _copy(broken, "torch_cuda", misspell)
    monkeypatch.setattr(_tables, "TABLES_DIR", broken)
    _tables._cached_tables.cache_clear()
    _redirect.load_table.cache_clear()
    try:
        with pytest.raises(TableError, match=r"torch_cuda.*CudaError.*'kind'"):
            _redirect.load_table()
    finally:
        monkeypatch.undo()
        _tables._cached_tables.cache_clear()
        _redirect.load_table.cache_clear()


# ------------------------------------------------------------------ re-exports
def _raw(name: str) -> dict:
    return json.loads((_tables.TABLES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def test_each_redirect_rule_is_written_once():
    # A name that two modules share is written in one and re-exported by the other.
    raw = _raw("torch_cuda")["modules"]
    written = {}
    for module, spec in raw.items():
        for name, rule in spec["names"].items():
            key = (name, json.dumps(rule, sort_keys=True))
            assert key not in written, f"{name} is written in {written.get(key)} and {module}"
            written[key] = module


def test_reexported_names_take_their_homes_rule():
    modules = _tables.load("torch_cuda").modules
    cuda = modules["torch.cuda"]
    assert set(cuda.reexports) == {"torch.cuda.memory", "torch.cuda.graphs"}
    count = 0
    for home, names in cuda.reexports.items():
        for name in names:
            assert cuda.names[name] is modules[home].names[name]
            count += 1
    assert count == 17
    assert cuda.names["CUDAGraph"].to == "MUSAGraph"
    assert (
        cuda.names["caching_allocator_alloc"].impl
        == "torchada._cuda.fills.cuda:caching_allocator_alloc"
    )


@pytest.mark.parametrize(
    "change, field, problem",
    [
        (
            lambda d: d["modules"]["torch.cuda"]["reexports"]["torch.cuda.graphs"].append("nope"),
            'reexports["torch.cuda.graphs"][3]',
            "torch.cuda.graphs declares no rule for 'nope'",
        ),
        (
            lambda d: d["modules"]["torch.cuda"]["reexports"].update({"torch.cuda.nowhere": []}),
            'reexports["torch.cuda.nowhere"]',
            "is not another module of this table",
        ),
        (
            lambda d: d["modules"]["torch.cuda"]["names"].update(
                graph={"kind": "original", "note": "twice"}
            ),
            'reexports["torch.cuda.graphs"][1]',
            "'graph' has a rule of its own in torch.cuda",
        ),
    ],
)
def test_a_bad_reexport_fails_at_load(tmp_path, change, field, problem):
    path = _copy(tmp_path, "torch_cuda", change)
    with pytest.raises(TableError) as info:
        _tables.load_file(path, "torch_cuda")
    assert (info.value.entry, info.value.field) == ('modules["torch.cuda"]', field)
    assert problem in str(info.value)
