"""Values derived from the package's data files, cached between processes (torchada._core.cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import MappingProxyType

import pytest

from torchada._core import cache as _cache
from torchada._core import tables as _tables


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "derived"


def test_value_is_computed_once_per_version_of_its_sources(cache_dir, tmp_path):
    source = tmp_path / "rows.json"
    source.write_text("[1, 2]")
    calls = []

    def compute():
        calls.append(1)
        return {"rows": MappingProxyType({"a": (1, 2)})}

    first = _cache.derived("rows", [source], compute)
    again = _cache.derived("rows", [source], compute)
    assert len(calls) == 1
    assert again == first and isinstance(again["rows"], MappingProxyType)
    assert [p.name[: len("rows-")] for p in cache_dir.iterdir()] == ["rows-"]

    source.write_text("[1, 2, 3]")  # an edit: new size and time
    _cache.derived("rows", [source], compute)
    assert len(calls) == 2
    assert len(list(cache_dir.iterdir())) == 1  # the stale value is gone


def test_stale_values_of_other_names_are_left_alone(cache_dir, tmp_path):
    source = tmp_path / "t.json"
    source.write_text("{}")
    _cache.derived("table-torch_cuda", [source], lambda: 1)
    source.write_text("{ }")
    _cache.derived("table-torch_c", [source], lambda: 2)
    names = sorted(p.name.rsplit("-", 2)[0] for p in cache_dir.iterdir())
    assert names == ["table-torch_c", "table-torch_cuda"]


def test_each_place_keeps_its_own_value(cache_dir, tmp_path):
    # Two checkouts of the same table: each keeps its value, neither evicts the other's.
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("1")
    b.write_text("2")
    assert _cache.derived("t", [a], lambda: "a") == "a"
    assert _cache.derived("t", [b], lambda: "b") == "b"
    assert len(list(cache_dir.iterdir())) == 2
    assert _cache.derived("t", [a], lambda: "recomputed") == "a"


def test_unreadable_value_is_computed_again(cache_dir, tmp_path):
    source = tmp_path / "t.json"
    source.write_text("{}")
    _cache.derived("t", [source], lambda: "first")
    (stored,) = cache_dir.iterdir()
    stored.write_bytes(b"not a stored value")
    assert _cache.derived("t", [source], lambda: "second") == "second"
    assert json.loads(stored.read_bytes())["value"] == "second"


def test_unwritable_cache_costs_only_the_computation(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(blocker / "below-a-file"))
    source = tmp_path / "t.json"
    source.write_text("{}")
    assert _cache.derived("t", [source], lambda: [1]) == [1]
    assert _cache.derived("t", [source], lambda: [2]) == [2]


def test_missing_source_means_no_caching(cache_dir, tmp_path):
    assert _cache.derived("t", [tmp_path / "absent.json"], lambda: 3) == 3
    assert not cache_dir.exists()


def test_cached_table_is_the_parsed_table(tmp_path):
    # In a fresh process with an empty cache, then again from the cache: same rows, and the
    # ABSENT marker (fields are compared with `is`) is the one instance both times.
    code = (
        "import json, torchada._core.tables as t\n"
        "c = t.load('torch_cuda')\n"
        "rows = [(m, n, r.kind, r.value is t.ABSENT) for m, s in c.modules.items()"
        " for n, r in s.names.items()]\n"
        "print(json.dumps(rows))\n"
    )
    env = {**os.environ, "TORCHADA_CACHE_DIR": str(tmp_path), "TORCHADA_DISABLE": "1"}
    outs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert (tmp_path / "derived").is_dir() and any((tmp_path / "derived").iterdir())
    fresh = _tables.load_file(_tables.TABLES_DIR / "torch_cuda.json", "torch_cuda")
    expected = [
        [m, n, r.kind, r.value is _tables.ABSENT]
        for m, s in fresh.modules.items()
        for n, r in s.names.items()
    ]
    assert any(row[3] for row in expected) and not all(row[3] for row in expected)
    assert [json.loads(out) for out in outs] == [expected, expected]
