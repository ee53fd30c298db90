"""Shared fixtures. The simulator, once activated, stays for the whole test process (a backend
rename cannot be undone); tests that need a pristine interpreter run a subprocess."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def musa_sim():
    """The simulated torch_musa module, activated in this process."""
    from torchada import _simulator

    return _simulator.activate()


@pytest.fixture
def musa_runtime_errors_read():
    """Reads the simulated runtime's pending error after a test that provokes runtime errors:
    errors are sticky until read, as CUDA's are, so a later test's launch check in the same
    process would otherwise report this test's error as its own."""
    yield
    from torchada._simulator import sdk

    sdk.load("musart").musaGetLastError()


@pytest.fixture(scope="module")
def torchada_on(musa_sim):
    """torchada enabled on the simulator for a whole test module, and disabled after it."""
    import torchada

    assert torchada.enable()
    yield
    torchada.disable()


def run_python(code: str, env: "dict | None" = None, timeout: float = 300, cwd=None):
    """Run ``code`` in a fresh interpreter; returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("TORCHADA_SIMULATE", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or REPO,
    )


# torch_musa warns (a UserWarning, then the line of its warnings.warn call) on a torch it is not
# built for, as the suite's torch 2.13 is for every simulated release.
TORCH_MUSA_VERSION_WARNING = "UserWarning: torch version should be v"


def sim_release() -> "tuple[str, dict]":
    """The simulated torch_musa release this run uses (TORCHADA_SIM_RELEASE, else the one its
    torch pairs with) and its facts (torchada/_simulator/releases.json): for tests whose
    expectation is one release's behaviour."""
    from torchada._simulator import releases

    name = releases.resolve()
    return name, releases.facts(name)


SIM_RELEASES = ("2.7.1", "2.9.1.post1", "2.11.0.post2")


def sim_release_params(names=SIM_RELEASES) -> list:
    """The simulated releases as pytest params, each skipped where this torch is older than
    the release is built for: a release refuses it at import, as real torch_musa does
    (tests/simulator/test_releases.py checks the refusal)."""
    import torch
    from torch._vendor.packaging.version import Version

    from torchada._simulator import releases

    here = Version(Version(torch.__version__).base_version)
    return [
        pytest.param(
            name,
            marks=pytest.mark.skipif(
                here < Version(releases.facts(name)["torch_minimum"]),
                reason=f"torch_musa {name} refuses torch {torch.__version__}",
            ),
        )
        for name in names
    ]


def is_torch_musa_version_warning(line: str) -> bool:
    """Whether ``line`` is torch_musa's warning about the torch it runs on."""
    return TORCH_MUSA_VERSION_WARNING in line


def user_warnings(stderr: str) -> "list[str]":
    """The UserWarning lines of a process's ``stderr``, torch_musa's torch-version warning left
    out (it is the release's, not the program's or torchada's)."""
    return [
        line
        for line in stderr.splitlines()
        if "UserWarning" in line and not is_torch_musa_version_warning(line)
    ]


@pytest.fixture
def py():
    return run_python


# ---------------------------------------------------------------- the simulator as a package
# On a MUSA machine torch_musa is an installed package whose own `torch.backends` entry point
# imports it at the end of `import torch`. `simulator_env(order)` gives a child process that
# state: the simulator's metadata (written by `python -m torchada simulator install`) and its
# package directory on PYTHONPATH, with torch_musa's entry point found before torchada's
# (order="musa-first") or after it ("musa-last"). "switch" is TORCHADA_SIMULATE=1 instead.
SIM_ORDERS = ("musa-first", "musa-last", "switch")
_SIM_TARGET = os.path.join(tempfile.gettempdir(), f"torchada-test-sim-{os.getpid()}")


def _installed_simulator() -> str:
    from torchada._simulator import SITE
    from torchada._simulator.install import install, is_installed

    if not is_installed(_SIM_TARGET):
        install(_SIM_TARGET)
    return SITE


def simulator_env(order: str, base: "dict | None" = None) -> dict:
    """An environment (copied from ``base``, default os.environ, without inherited torchada
    switches) in which a child's `import torch` meets the simulator as ``order`` says, and
    imports this checkout's torchada."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _INHERITED}
    theirs = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if order == "switch":
        env["TORCHADA_SIMULATE"] = "1"
        path = [REPO]
    elif order == "musa-first":
        path = [_SIM_TARGET, _installed_simulator(), REPO]
    elif order == "musa-last":
        # site-packages first: torchada's entry point (its dist-info there) is found first.
        path = [sysconfig.get_paths()["purelib"], REPO, _SIM_TARGET, _installed_simulator()]
    else:
        raise ValueError(order)
    env["PYTHONPATH"] = os.pathsep.join(path + theirs)
    return env


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SIM_TARGET, ignore_errors=True)
    shutil.rmtree(_HIDE_DIR, ignore_errors=True)


# ---------------------------------------------------------------- packages made not installed
# A child process in which installed distributions are not installed, as far as the program can
# tell: `import` raises ModuleNotFoundError, importlib.util.find_spec answers None and
# importlib.metadata finds no distribution. A sitecustomize (first on PYTHONPATH, so also in every
# process the child starts) replaces the path finder in sys.meta_path with one that does not find
# the distributions' top-level modules and metadata; nothing is uninstalled. Where a distribution
# is not installed at all (the minimal-install CI step), hiding it changes nothing.
_HIDE_DIR = os.path.join(tempfile.gettempdir(), f"torchada-test-hide-{os.getpid()}")
HIDE_ENV = "TORCHADA_TEST_HIDDEN"
_HIDING_SITECUSTOMIZE = """\
# Written by tests/conftest.py (hidden_packages_env): distributions named in $TORCHADA_TEST_HIDDEN
# look not installed.
import os
import re
import sys
from importlib.machinery import PathFinder


def _hide():
    modules, _, names = os.environ.get("TORCHADA_TEST_HIDDEN", "").partition(";")
    modules = set(filter(None, modules.split(",")))
    names = set(filter(None, names.split(",")))
    if not modules and not names:
        return

    def canonical(name):
        return re.sub(r"[-_.]+", "-", name or "").lower()

    class NotInstalledFinder(PathFinder):
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname.partition(".")[0] in modules:
                return None
            return PathFinder.find_spec(fullname, path, target)

        @staticmethod
        def find_distributions(*args, **kwargs):
            for dist in PathFinder.find_distributions(*args, **kwargs):
                if canonical(dist.metadata["Name"]) not in names:
                    yield dist

    sys.meta_path[:] = [NotInstalledFinder if f is PathFinder else f for f in sys.meta_path]
    for name in list(sys.modules):
        if name.partition(".")[0] in modules:
            del sys.modules[name]


def _run_the_shadowed_one():
    # The sitecustomize this one stands in front of, if the interpreter has one.
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        import importlib.util

        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_hide()
_run_the_shadowed_one()
"""


def distribution_modules(distribution: str) -> "list[str]":
    """The top-level modules an installed distribution provides (none where it is not
    installed)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    listed = dist.read_text("top_level.txt")
    if listed:
        return sorted({line.strip() for line in listed.splitlines() if line.strip()})
    out = set()
    for file in dist.files or ():
        parts = file.parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith(".dist-info"):
            continue
        if len(parts) == 1 and parts[0].endswith(".py"):
            out.add(parts[0][:-3])
        elif len(parts) > 1 and parts[-1] == "__init__.py":
            out.add(parts[0])
    return sorted(out)


def hidden_packages_env(distributions, env: "dict | None" = None) -> dict:
    """Environment variables (added to ``env``, or to an empty dict) under which a child process
    sees the installed ``distributions`` (PyPI names: "mthreads-ml-py") as not installed, and so
    does every process it starts. Used with run_cuda_program's ``extra_env``."""
    os.makedirs(_HIDE_DIR, exist_ok=True)
    path = os.path.join(_HIDE_DIR, "sitecustomize.py")
    try:
        with open(path) as f:
            current = f.read()
    except OSError:
        current = None
    if current != _HIDING_SITECUSTOMIZE:  # replaced whole: a child may be reading it
        with open(path + ".tmp", "w") as f:
            f.write(_HIDING_SITECUSTOMIZE)
        os.replace(path + ".tmp", path)
    names = sorted({canonical_name(d) for d in distributions})
    modules = sorted({m for d in names for m in distribution_modules(d)})
    out = dict(env or {})
    out[HIDE_ENV] = ",".join(modules) + ";" + ",".join(names)
    theirs = out.get("PYTHONPATH") or ""
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [_HIDE_DIR, theirs]))
    return out


#: What a user installs (and CI's minimal-install step holds): torch, torchada, and pytest to
#: run the tests; with everything they require.
USER_INSTALL = ("torch", "torchada", "pytest", "pip", "setuptools")


def canonical_name(name: str) -> str:
    """A distribution's name as PyPI compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def user_install_closure(top=USER_INSTALL) -> "set[str]":
    """The installed distributions ``top`` and everything they require (canonical names)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: "set[str]" = set()
    todo = [canonical_name(t) for t in top]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in dist.requires or ():
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonical_name(req.name))
    return seen


def user_install_env(env: "dict | None" = None, keep=("ninja",)) -> dict:
    """``hidden_packages_env`` hiding every installed distribution outside a user's install
    (:data:`USER_INSTALL`, plus ``keep`` with what it requires): the test extras, DeepSpeed, ...
    In CI's minimal-install step there is nothing to hide. ``ninja`` is kept by default: the
    simulator's native pieces are built with it (CI's minimal-install step puts it on PATH)."""
    from importlib import metadata

    kept = user_install_closure((*USER_INSTALL, *keep))
    # The environment's own (site-packages): not what a package vendors and puts on sys.path
    # once imported (setuptools' jaraco, say), which its own imports need.
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    found = metadata.distributions(path=site)
    installed = {canonical_name(d.metadata["Name"] or "") for d in found}
    return hidden_packages_env(sorted(installed - kept - {""}), env)


# ---------------------------------------------------------------- end-to-end CUDA programs
# The two ways a CUDA-written program meets torchada, without any other change to it:
#   "runner": python -m torchada.run --simulate prog.py ...
#   "import": the program with `import torchada` added as its first line, run as
#             python prog.py ... with TORCHADA_SIMULATE=1 (the simulator's switch; on a MUSA
#             machine the line alone is the whole port).
#   "child":  the simulator installed as a package (its own entry point, as on a MUSA machine);
#             a parent process that did `import torchada` starts the program (with `import
#             torchada` as its first line) as a child, which inherits TORCHADA_ACTIVE=1.
# With torchrun=True the program is started by torch.distributed.run with two processes per node
# (under the runner: python -m torchada.run --simulate -m torch.distributed.run ...).
E2E_MODES = ("runner", "import", "child")
_CHILD_PARENT = """
import subprocess, sys
import torchada
assert torchada.is_enabled(), "the parent did not turn torchada on"
sys.exit(subprocess.run([sys.executable, *sys.argv[1:]]).returncode)
"""
_INHERITED = ("TORCHADA_SIMULATE", "TORCHADA_ACTIVE", "TORCHADA_REPORT", "TORCHADA_REPORT_OWNER")


def run_cuda_program(
    mode: str,
    program: str,
    args=(),
    *,
    workdir,
    torchrun: bool = False,
    timeout: float = 400,
    extra_env=None,
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
    env.update(extra_env or {})
    # This checkout's torchada, in the program and in every process it starts.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    launcher = launcher if torchrun else []
    if mode == "runner":
        cmd = [sys.executable, "-m", "torchada.run", "--simulate", *launcher, program]
    elif mode in ("import", "child"):
        with open(program) as f:
            source = f.read()
        ported = os.path.join(str(workdir), "imported_" + os.path.basename(program))
        with open(ported, "w") as f:
            f.write("import torchada\n" + source)
        if mode == "import":
            env["TORCHADA_SIMULATE"] = "1"
            cmd = [sys.executable, *launcher, ported]
        else:
            env = simulator_env("musa-first", env)
            cmd = [sys.executable, "-c", _CHILD_PARENT, *launcher, ported]
    else:
        raise ValueError(mode)
    return subprocess.run(
        [*cmd, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=str(workdir),
    )


def program_result(r: subprocess.CompletedProcess) -> dict:
    """The last JSON line a program printed, after checking that it exited cleanly."""
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines, r.stdout[-2000:]
    return json.loads(lines[-1])


def decreasing(values) -> bool:
    """Whether a run's losses are finite and end below where they started."""
    return all(math.isfinite(v) for v in values) and values[-1] < values[0]


@pytest.fixture
def cuda_program():
    """``cuda_program(mode, program, args, workdir=..., torchrun=False)``: see run_cuda_program."""
    return run_cuda_program


def pytest_collection_modifyitems(config, items):
    # Tests on the (simulated) MUSA device: those that take the simulator or torchada itself.
    for item in items:
        if {"musa_sim", "torchada_on"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.musa)


# Everything torchada may load where it has nothing to do (CPU, CUDA): the platform check, the
# entry point and the public API's module. No tables, no import hooks, no wrapt.
OFF_MUSA_MODULES = {
    "torchada",
    "torchada._activation",
    "torchada._autoload",
    "torchada._core",
    "torchada._core.env",
    "torchada._core.platform",
    "torchada._simulator",
    "torchada_hooks",
    "torchada_hooks.completion",
}

_LOADED_BY_TORCHADA = """
import json, sys, torch
import torchada
assert not torchada.is_enabled()
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("torchada", "wrapt")))))
"""


def modules_loaded_off_musa() -> set:
    """torchada's (and wrapt's) modules in sys.modules after `import torch; import torchada` in
    a fresh process with no simulation (a CPU or CUDA machine)."""
    r = run_python(_LOADED_BY_TORCHADA)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))
