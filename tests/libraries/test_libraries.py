"""The one library table (torchada/tables/libraries.json): ctypes, the build-setting translation
and the porter take CUDA and MUSA library names from it, and agree with it."""

from __future__ import annotations

import json

import pytest

from torchada._core import tables as _tables
from torchada._libraries import ctypes_bindings as _ctypes
from torchada._libraries import names as _names
from torchada.porting import load_rules, port_source
from torchada.porting._ruleset import RULES_DIR

LIBRARIES = _tables.load("libraries").libraries
CTYPES = [lib for lib in LIBRARIES if lib.ctypes]
KEPT = [lib for lib in LIBRARIES if lib.musa is not None]


def test_library_names_are_written_only_here():
    build = json.loads((_tables.TABLES_DIR / "cuda_build.json").read_text(encoding="utf-8"))
    assert "libraries" not in build
    assert not (_tables.TABLES_DIR / "ctypes_libraries.json").exists()
    headers = json.loads((RULES_DIR / "headers.json").read_text(encoding="utf-8"))["rules"]
    derived = {f"{lib.cuda}.h" for lib in LIBRARIES if lib.header}
    assert derived and not derived & {rule["cuda"] for rule in headers}


@pytest.mark.parametrize("lib", CTYPES, ids=[lib.cuda for lib in CTYPES])
def test_ctypes_loads_the_rows_musa_library(lib):
    for name in (f"lib{lib.cuda}.so", f"lib{lib.cuda}.so.12", f"lib{lib.cuda}"):
        assert _ctypes._classify(name) == ("cuda", lib)
    assert _ctypes._classify(f"lib{lib.musa}.so") == ("musa", lib)
    assert lib.musa_file == f"lib{lib.musa}.so"


def test_only_the_ctypes_rows_are_loaded_through_ctypes():
    for lib in LIBRARIES:
        if not lib.ctypes:
            assert _ctypes._classify(f"lib{lib.cuda}.so") == (None, None)


def test_build_settings_translate_every_name_of_the_table():
    from torchada._extensions.build_settings import (
        runtime_library,
        translate_ldflags,
        translate_libraries,
    )

    for lib in LIBRARIES:
        names = [lib.cuda, *lib.aliases]
        expected = [] if lib.musa is None else [lib.musa] * len(names)
        assert translate_libraries(names) == expected
        assert translate_ldflags([f"-l{n}" for n in names]) == [f"-l{m}" for m in expected]
    assert runtime_library() == _tables.load("libraries").musa_name("cudart") == "musart"


def test_the_porter_renames_each_librarys_main_header():
    by_key = load_rules().by_key
    for lib in LIBRARIES:
        if lib.header:
            rule = by_key[f"{lib.cuda}.h"]
            assert (rule.kind, rule.musa, rule.domain) == ("header", f"{lib.musa}.h", "headers")
            out, _ = port_source(f"#include <{lib.cuda}.h>\n")
            assert out == f"#include <{lib.musa}.h>\n"


def test_porting_domains_and_symbol_prefixes_agree_with_the_porter():
    rules = load_rules()
    for lib in KEPT:
        if lib.porting is not None:
            assert lib.porting in rules.domains, lib.cuda
        for cuda_prefix, musa_prefix in lib.symbols:
            renames = [
                r
                for r in rules.domains[lib.porting or ""]
                if r.kind == "rename" and r.cuda.startswith(cuda_prefix)
            ]
            assert renames, lib.cuda
            for rule in renames:
                assert rule.musa.startswith(musa_prefix), (lib.cuda, rule)


def test_name_helpers_use_the_tables_prefixes():
    assert _names.nccl_to_mccl_name("ncclAllReduce") == "mcclAllReduce"
    assert _names.cuda_to_musa_name("cudaMalloc") == "musaMalloc"


def test_a_name_written_twice_fails_at_load(tmp_path):
    data = json.loads((_tables.TABLES_DIR / "libraries.json").read_text(encoding="utf-8"))
    data["libraries"].append({"cuda": "cudart_static", "musa": "musart"})
    path = tmp_path / "libraries.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(_tables.TableError, match="'cudart_static' is already a name of library"):
        _tables.load_file(path, "libraries")
