"""Environment switches: declared once as data (torchada/tables/switches.json), documented from
that data, and a bad value gets one message naming the variable, the value and what it takes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchada._core import env as _env
from torchada._cuda import registry_docs as _docs

REPO = Path(__file__).resolve().parents[2]


def test_readme_table_is_generated_from_the_declarations():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert _docs.with_switch_table(readme) == readme, "run `python -m torchada tables`"
    for name in ("TORCHADA_NATIVE", "TORCHADA_CUDA_IS_MUSA", "TORCHADA_REPORT"):
        assert f"| `{name}` |" in readme


def test_every_variable_the_code_reads_is_declared():
    declared = [s["name"] for s in _env.switches()]
    patterns = [
        re.escape(n)
        .replace(re.escape("<SUBSYSTEM>"), "[A-Z_]+")
        .replace(re.escape("<NAME>"), "[A-Z_]+")
        for n in declared
    ]
    read = set()
    for root in ("torchada", "torchada_hooks"):
        for path in (REPO / root).rglob("*.py"):
            if "_simulator/site" in str(path):
                continue
            read |= set(
                re.findall(
                    r"\"((?:TORCHADA_|MUSA_VISIBLE_DEVICES|MTGPU_TARGET)[A-Z_]*)\"",
                    path.read_text(encoding="utf-8"),
                )
            )
    missing = {
        name
        for name in read
        if not name.endswith("_") and not any(re.fullmatch(p, name) for p in patterns)
    }
    assert missing == set()
    assert len(read) >= 15


@pytest.mark.parametrize(
    "name, raw, accepted",
    [
        ("TORCHADA_SIM_DEVICES", "²", "a whole number from 0 to 16"),
        ("TORCHADA_SIM_DEVICES", "17", "a whole number from 0 to 16"),
        ("TORCHADA_SIM_DEVICES", "-1", "a whole number from 0 to 16"),
        ("TORCHADA_SIM_BOARD", "S9", "one of 'S80', 'S3000', 'S4000', 'S5000'"),
        ("TORCHADA_PLATFORM", "gpu", "one of 'musa', 'cuda', 'cpu'"),
    ],
)
def test_bad_values_name_the_variable_the_value_and_what_it_takes(name, raw, accepted):
    from torchada._core import platform as _platform
    from torchada._simulator import config

    env = {name: raw}
    with pytest.raises(ValueError) as err:
        if name == "TORCHADA_PLATFORM":
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv(name, raw)
                _platform.detect_platform.cache_clear()
                try:
                    _platform.detect_platform()
                finally:
                    mp.delenv(name)
                    _platform.detect_platform.cache_clear()
        else:
            config.read_config(env)
    assert str(err.value).startswith(f"{name}={raw!r} is not valid: use {accepted} (")


@pytest.mark.parametrize("raw", ["garbage", "", "-1", "5", "0,x,1"])
def test_musa_visible_devices_that_hide_devices_say_so(raw):
    from torchada._simulator import config

    with pytest.warns(UserWarning, match=r"MUSA_VISIBLE_DEVICES=.*reading stops at"):
        cfg = config.read_config({"MUSA_VISIBLE_DEVICES": raw})
    assert cfg.visible == ((0,) if raw == "0,x,1" else ())


def test_platform_cpu_beside_the_simulator_says_torchada_stays_off(py):
    r = py(
        "import torchada, torch\nprint(torchada.is_enabled())",
        env={"TORCHADA_PLATFORM": "cpu", "TORCHADA_SIMULATE": "1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
    assert "TORCHADA_PLATFORM='cpu' with TORCHADA_SIMULATE=1" in r.stderr
    assert "Dispatcher" not in r.stderr and "Traceback" not in r.stderr


def test_an_unusable_cache_directory_says_to_change_the_variable(tmp_path, monkeypatch):
    from torchada._native import build as _build

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TORCHADA_CACHE_DIR", str(blocker / "cache"))
    src = tmp_path / "libx.c"
    src.write_text("int x(void) { return 1; }\n")
    with pytest.raises(_build.NativeBuildError, match="set TORCHADA_CACHE_DIR to a writable"):
        _build.build_shared_libraries("x", [src])
