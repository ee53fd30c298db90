"""Native builds: cached by a key of the sources and toolchain, built once under a file lock.

Two kinds of artefact go through here, both driven by ninja:
- torch C++ extensions (through ``torch.utils.cpp_extension.load``, which writes a ninja file);
- plain C shared libraries (our own ``build.ninja``), e.g. the simulator's ``libmusart.so``.

Either way ninja runs through :func:`torchada._native.progress.run_ninja`: a cold build shows
ninja's ``[n/m]`` on a terminal; in a log one line at each end and one every 15 s between them
(:mod:`.progress`).

The lock is ``fcntl.flock`` on a file beside the build directory: the kernel drops it when the
holder dies, so a build killed half-way never makes a later import wait forever (torch's own lock
file does).

A cached library is loaded only from a build directory, marker and library that no other user
could have written (torchada._core.cache.trusted: owner and mode, a few ``stat`` calls); where one
could have, the build is done again in a private directory of this user's. Builds are made private
(0700 folders, 0600 marker).

Extensions with MUSA kernel sources (``.mu``) are compiled by torch_musa's own loader
(``torch_musa.utils.musa_extension``), which drives mcc; callers decide whether mcc exists.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from .._core.cache import cache_root, make_dirs, private_root, trusted, write_atomically
from .._core.env import flag
from .._core.records import record
from .progress import Progress, ninja_command, run_ninja

logger = logging.getLogger("torchada")

_REPO_ROOT = Path(__file__).resolve().parents[2]


class NativeBuildError(RuntimeError):
    """A native build failed; the message carries the compiler output."""


# A compiler's or linker's diagnostic: "file:line:col: error: ...", "fatal error: ...",
# "undefined reference to ...".
_ERROR_LINE = re.compile(r"(\berror\b:|fatal error|undefined reference|undefined symbol)", re.I)


def describe_failure(err: BaseException, limit: int = 3) -> str:
    """One line that says why ``err`` happened, for a warning: the first ``limit`` error lines of
    a failed build's compiler output, else the first non-empty line of the message, else the
    exception's type.

    Example::

        >>> describe_failure(NativeBuildError("building x failed:\nx.cpp:3:1: error: boom"))
        'x.cpp:3:1: error: boom'
        >>> describe_failure(OSError("no space left"))
        'OSError: no space left'
    """
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    errors = [line for line in lines if _ERROR_LINE.search(line) and not line.startswith("FAILED")]
    if isinstance(err, NativeBuildError) and errors:
        more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
        return "; ".join(errors[:limit]) + more
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def files_ending(directory: Path, suffix: str) -> List[Path]:
    """The files of ``directory`` whose names end with ``suffix``, sorted; none when it is
    missing. (``Path.glob`` compiles a pattern per call, a millisecond at every activation.)

    Example::

        >>> [p.name for p in files_ending(csrc_dir() / "cuda_shims", ".h")]  # doctest: +SKIP
        ['forward.h']
    """
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [directory / n for n in sorted(names) if n.endswith(suffix)]


def csrc_dir() -> Path:
    """Where the native sources live: ``torchada/_csrc`` in a wheel, ``csrc/`` in a checkout."""
    packaged = Path(__file__).resolve().parents[1] / "_csrc"
    return packaged if packaged.is_dir() else _REPO_ROOT / "csrc"


VERBOSE_ENV = "TORCHADA_VERBOSE_BUILD"


def verbose_builds(*also: str) -> bool:
    """``TORCHADA_VERBOSE_BUILD=1`` (or any of the variables in ``also``) shows the build: the
    compiler's commands and output, line by line.

    Example::

        >>> verbose_builds()  # doctest: +SKIP
        False
    """
    return any(flag(name) for name in (VERBOSE_ENV, *also))


@record
class BuildRecord:
    """What the last :func:`load_torch_extension` call of a name found or did."""

    name: str
    path: Path  # the loaded shared object
    built: bool  # False: taken from the cache
    seconds: float  # build time, or lookup and load time when cached


_records: Dict[str, BuildRecord] = {}


def last_build(name: str) -> Optional[BuildRecord]:
    return _records.get(name)


def headers_digest(directory: Path) -> str:
    """A digest of the headers in ``directory``: the build key covers compiled sources only."""
    h = hashlib.sha256()
    for header in files_ending(directory, ".h"):
        h.update(header.name.encode() + b"\0" + header.read_bytes())
    return h.hexdigest()[:16]


def build_key(sources: Sequence[Path], *extra: str) -> str:
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode())
        h.update(src.read_bytes())
    for item in extra:
        h.update(b"\0" + item.encode())
    h.update(sys.version.encode())
    return h.hexdigest()[:16]


def _fingerprint(path: Path) -> str:
    st = path.stat()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{path.name} {st.st_size} {st.st_mtime_ns} {digest}"


def _seal(done: Path, artefacts: Sequence[Path]) -> None:
    """Record what a completed build produced (name, size, mtime, sha256), written atomically;
    the artefacts are made this user's alone (a linker honours the umask, which may let the group
    write)."""
    for artefact in artefacts:
        os.chmod(artefact, 0o700)
    write_atomically(done, "".join(_fingerprint(a) + "\n" for a in artefacts).encode())


def _build_dir(name: str, key: str, files: Sequence[str]) -> Path:
    """Where build ``key`` of ``name`` lives: in the cache, unless its directory, marker or
    ``files`` there could have been written by another user (said once), or it is not built and
    the cache is read-only to this user; then in a private directory of this user's."""
    root = cache_root()
    build_dir = root / name / key
    if all(trusted(build_dir / f) for f in (".complete", *files)):
        # A cache an administrator filled and others only read: what it lacks is built privately.
        if (build_dir / ".complete").exists() or not root.is_dir() or os.access(root, os.W_OK):
            return build_dir
    return private_root() / name / key


def _intact(done: Path, artefacts: Sequence[Path]) -> bool:
    """Whether a cached build is what was recorded when it completed. Size and mtime are compared
    at every load (a stat each); the sha256 only when they differ. A marker without records (an
    older torchada's) or a damaged file means: build again, never load it."""
    try:
        lines = done.read_text().splitlines()
    except OSError:
        return False
    recorded = {}
    for line in lines:
        parts = line.split(" ")
        if len(parts) == 4:
            recorded[parts[0]] = parts[1:]
    for artefact in artefacts:
        entry = recorded.get(artefact.name)
        try:
            st = artefact.stat()
        except OSError:
            return False
        if entry is None or int(entry[0]) != st.st_size:
            break
        if int(entry[1]) != st.st_mtime_ns:
            if hashlib.sha256(artefact.read_bytes()).hexdigest() != entry[2]:
                break
    else:
        return True
    logger.warning(
        "torchada: the cached build in %s is damaged or incomplete; building it again", done.parent
    )
    return False


def is_intact_build(artefact: Path) -> bool:
    """Whether ``artefact`` (a file that :func:`build_shared_libraries` returned) is still what its
    build produced: a path remembered from an earlier process is used only then.

    Example::

        >>> is_intact_build(Path("/nonexistent/libcudart.so"))
        False
    """
    done = artefact.parent / ".complete"
    return trusted(done) and trusted(artefact) and done.exists() and _intact(done, [artefact])


@contextlib.contextmanager
def _locked(path: Path, what: str = "") -> Iterator[None]:
    """Hold the build lock ``path``. A process that has to wait says so on stderr at once, naming
    the process that builds (a cold build takes minutes: silence looks like a hang); on a terminal
    the line counts the seconds, and a line at the end says how long it waited."""
    try:
        make_dirs(path.parent)
        fh = open(os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+")
    except OSError as err:
        raise NativeBuildError(
            f"cannot build in the cache directory {cache_root()} ({err}); set TORCHADA_CACHE_DIR "
            "to a writable directory"
        ) from err
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _wait_for_lock(fh, path, what)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")  # who builds, for those who wait
            fh.flush()
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _wait_for_lock(fh: Any, path: Path, what: str) -> None:
    fh.seek(0)
    pid = fh.read().strip()  # the builder records itself once it holds the lock
    who = f"process {pid}" if pid else "another process"
    what = what or path.stem
    with Progress(
        f"torchada: waiting for {who} to finish building {what} (lock {path})...",
        f"torchada: {who} is done with {what}; waited {{seconds:.1f}} s",
        f"torchada: stopped waiting for {who} after {{seconds:.1f}} s",
        ongoing=f"torchada: still waiting for {who} to finish building {what}",
    ):
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.1)


def _private_dir(build_dir: Path) -> Path:
    """A fresh directory beside ``build_dir`` for this process's build, renamed into place when it
    completes: compilers orphaned by a killed builder keep writing into its directory, never into
    the next builder's. Directories of builders that are gone are removed (we hold the lock)."""
    for stale in build_dir.parent.glob(f"{build_dir.name}.building-*"):
        shutil.rmtree(stale, ignore_errors=True)
    private = build_dir.parent / f"{build_dir.name}.building-{os.getpid()}"
    make_dirs(private)
    return private


def _move_into_place(private: Path, build_dir: Path) -> None:
    if build_dir.exists():
        shutil.rmtree(build_dir)
    private.rename(build_dir)


def ensure_ninja_on_path() -> str:
    """Return the path of a ``ninja`` binary, putting the PyPI ``ninja`` wheel's on ``PATH`` first
    when none is there (torch's extension builder finds ninja through ``PATH`` only).

    Raises:
        NativeBuildError: neither a ``ninja`` on ``PATH`` nor the ``ninja`` package is installed.

    Example::

        >>> from torchada._native.build import ensure_ninja_on_path
        >>> ensure_ninja_on_path().endswith("ninja")
        True
    """
    found = shutil.which("ninja")
    if found:
        return found
    try:
        import ninja  # the PyPI wheel ships the binary

        os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
        return os.path.join(ninja.BIN_DIR, "ninja")
    except ImportError as err:
        raise NativeBuildError(
            "ninja is needed to build torchada's native code: `pip install ninja`"
        ) from err


def _showing(what: str) -> Progress:
    """The lines a cold build shows on stderr (see :mod:`.progress`): a build takes from a second
    to minutes, and silence cannot be told from a hang."""
    return Progress(
        f"torchada: building {what} (first use, cached afterwards)...",
        f"torchada: built {what} in {{seconds:.1f}} s",
        f"torchada: building {what} failed after {{seconds:.1f}} s",
        ongoing=f"torchada: still building {what}",
    )


def _echo(shown: Progress, verbose: bool) -> Optional[Callable[[str], None]]:
    """Where a verbose build's compiler lines go: stderr, apart from the redrawn line."""
    return shown.say if verbose else None


# torch's ninja runners routed through run_ninja, by id(module): (module, torch's runner, how many
# builds use the route now). The route serves only the threads in _relayed; others get torch's.
_routes: Dict[int, Tuple[ModuleType, Any, int]] = {}
_routes_lock = threading.Lock()
_relayed = threading.local()


def _route(original: Any) -> Any:
    def _run_ninja_build(
        build_directory: str, verbose: bool = False, error_prefix: str = ""
    ) -> None:
        shown = getattr(_relayed, "shown", None)
        if shown is None:
            return original(build_directory, verbose, error_prefix)
        command = ninja_command(ensure_ninja_on_path())
        echo = _echo(shown, _relayed.verbose)
        status, output = run_ninja(command, build_directory, shown.status, echo)
        if status != 0:  # as torch's runner says it: the prefix, then ninja's whole output
            raise RuntimeError(f"{error_prefix}: {output}")

    return _run_ninja_build


@contextlib.contextmanager
def _ninja_through(shown: Progress, verbose: bool, *modules: Any) -> Iterator[bool]:
    """Route torch's ninja runs in this thread through :func:`run_ninja`, so that ninja's
    ``[n/m]`` reaches ``shown`` (torch's own runner keeps ninja's output until the end).

    torch's loaders run ninja through a module-level ``_run_ninja_build(build_directory, verbose,
    error_prefix)`` (torch_musa's imports torch's under the same name); where a module has none
    (a torch that renamed it), its own runner is left in place and only the seconds are shown.
    torch's runner is back in place once the last build using the route is done. Yields whether
    any runner was routed.
    """
    used = []
    with _routes_lock:
        for module in {id(m): m for m in modules if isinstance(m, ModuleType)}.values():
            entry = _routes.get(id(module))
            if entry is None:
                original = vars(module).get("_run_ninja_build")
                if not callable(original):
                    continue
                module._run_ninja_build = _route(original)  # type: ignore[attr-defined]
                entry = (module, original, 0)
            _routes[id(module)] = (entry[0], entry[1], entry[2] + 1)
            used.append(id(module))
    _relayed.shown, _relayed.verbose = shown, verbose
    try:
        yield bool(used)
    finally:
        _relayed.shown = None
        with _routes_lock:
            for key in used:
                module, original, users = _routes.pop(key)
                if users > 1:
                    _routes[key] = (module, original, users - 1)
                else:
                    module._run_ninja_build = original  # type: ignore[attr-defined]


def _load_extension_file(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def _cpp_extension_module() -> ModuleType:
    # Apart from torch_cpp_extension, which callers may swap: ninja is routed in torch's own module.
    module = importlib.import_module("torch.utils.cpp_extension")
    return vars(module).get("__torchada_original__") or module


def torch_cpp_extension() -> ModuleType:
    """torch's own ``torch.utils.cpp_extension``, also while torchada's proxy stands in for it.

    torchada's builds reference CUDA names on purpose; the proxy's porting front end must not
    rewrite them.
    """
    return _cpp_extension_module()


def _is_musa_source(path: Path) -> bool:
    return path.suffix in (".mu", ".muh")


@contextlib.contextmanager
def temporary_env(name: str, value: Optional[str]) -> Iterator[None]:
    """Set ``name`` to ``value`` for the duration (None: leave it alone), then restore it."""
    if value is None:
        yield
        return
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _musa_arch_list(arch: Optional[str]) -> ContextManager[None]:
    # torch_musa's loader reads the target from TORCH_MUSA_ARCH_LIST ("22" for mp_22).
    return temporary_env("TORCH_MUSA_ARCH_LIST", None if arch is None else arch.split("_", 1)[-1])


def torch_extension_dir(
    name: str,
    sources: Sequence[Path],
    extra_cflags: Sequence[str] = (),
    key_extra: Sequence[str] = (),
    extra_include_paths: Sequence[Path] = (),
    musa_arch: Optional[str] = None,
) -> Path:
    """Where :func:`load_torch_extension` with these arguments keeps its build (built or not).

    Example::

        >>> torch_extension_dir("x", [Path("x.cpp")])  # doctest: +SKIP
        PosixPath('/home/me/.cache/torchada/x/0123456789abcdef')
    """
    import torch

    include_paths = [str(p) for p in extra_include_paths]
    # Only what is given joins the key: callers without extras keep the keys they always had.
    extras = [*extra_cflags, *include_paths, *key_extra, *([musa_arch] if musa_arch else [])]
    # csrc/torch_features.h, which every native source may include, is part of every key.
    extras.append(f"csrc {headers_digest(csrc_dir())}")
    key = build_key([Path(s) for s in sources], torch.__version__, *extras)
    return _build_dir(name, key, [f"{name}.so"])


def is_built(name: str, build_dir: Path) -> bool:
    """Whether ``build_dir`` (from :func:`torch_extension_dir`) holds a completed, intact build
    of extension ``name``: what the next load takes without building.

    Example::

        >>> is_built("x", Path("/nonexistent"))
        False
    """
    done = build_dir / ".complete"
    return done.exists() and _intact(done, [build_dir / f"{name}.so"])


def load_torch_extension(
    name: str,
    sources: Sequence[Path],
    extra_cflags: Sequence[str] = (),
    *,
    key_extra: Sequence[str] = (),
    extra_include_paths: Sequence[Path] = (),
    verbose: Optional[bool] = None,
    musa_arch: Optional[str] = None,
) -> ModuleType:
    """Build (once) and import a torch C++ extension from ``sources``.

    The cache key covers the sources, the flags, torch's version and ``key_extra`` (what else the
    result depends on: headers, torch_musa's version, the MUSA target). ``.mu`` sources go
    through torch_musa's loader with ``musa_arch`` (``mp_22``) as the target.
    """
    sources = [Path(s) for s in sources]
    with_musa = any(_is_musa_source(s) for s in sources)
    include_paths = [str(p) for p in extra_include_paths]
    build_dir = torch_extension_dir(
        name, sources, extra_cflags, key_extra, extra_include_paths, musa_arch
    )
    artefact = build_dir / f"{name}.so"
    # The marker, not the .so, says "done": a link killed half-way can leave a truncated .so.
    done = build_dir / ".complete"
    start = time.perf_counter()
    if is_built(name, build_dir):
        module = _load_extension_file(name, artefact)
        _records[name] = BuildRecord(name, artefact, False, time.perf_counter() - start)
        return module
    with _locked(build_dir.with_suffix(".lock"), f"native library '{name}'"):
        if is_built(name, build_dir):  # built by another process meanwhile
            module = _load_extension_file(name, artefact)
            _records[name] = BuildRecord(name, artefact, False, time.perf_counter() - start)
            return module
        private = _private_dir(build_dir)
        ensure_ninja_on_path()
        if with_musa:
            from torch_musa.utils import musa_extension as loader

            musa_flags = {"extra_musa_cflags": ["-O2"]}
        else:
            loader = torch_cpp_extension()
            musa_flags = {}
        verbose = verbose_builds() if verbose is None else verbose
        shown = _showing(f"native library '{name}'")
        try:
            relay = _ninja_through(shown, verbose, loader, _cpp_extension_module())
            with shown, relay as relayed, _musa_arch_list(musa_arch if with_musa else None):
                module = loader.load(
                    name=name,
                    sources=[str(s) for s in sources],
                    extra_cflags=["-O2", *extra_cflags],
                    extra_include_paths=include_paths or None,
                    build_directory=str(private),
                    verbose=verbose and not relayed,  # else the relay shows the compiler lines
                    **musa_flags,
                )
        except Exception as err:  # torch raises RuntimeError carrying the compiler output
            shutil.rmtree(private, ignore_errors=True)
            raise NativeBuildError(f"building {name} failed:\n{err}") from err
        _seal(private / done.name, [private / artefact.name])
        _move_into_place(private, build_dir)  # the loaded library stays mapped across the rename
        # torch's loader imports without registering; a cached load registers (so the process
        # that built it must too, or sys.modules lookups differ on first use only).
        sys.modules.setdefault(name, module)
        seconds = shown.seconds
        _records[name] = BuildRecord(name, artefact, True, seconds)
        logger.info("built %s in %.1f s at %s", name, seconds, build_dir)
        return module


def c_compiler() -> str:
    """The C compiler :func:`build_shared_libraries` runs: ``$CC``, else ``cc``.

    Example::

        >>> c_compiler()  # doctest: +SKIP
        'cc'
    """
    return os.environ.get("CC", "cc")


def build_shared_libraries(
    name: str,
    sources: Sequence[Path],
    cflags: Sequence[str] = ("-O2",),
    depends: Sequence[Path] = (),
) -> dict[str, Path]:
    """Build one plain C shared library per source (``foo.c`` -> ``foo.so``) with ninja.

    Returns ``{stem: path}``. Cached by a key of the sources and ``depends`` (headers), built once
    under the lock.
    """
    sources = [Path(s) for s in sources]
    cc = c_compiler()
    key = build_key([*sources, *map(Path, depends)], cc, *cflags)
    build_dir = _build_dir(name, key, [f"{s.stem}.so" for s in sources])
    outputs = {s.stem: build_dir / f"{s.stem}.so" for s in sources}
    done = build_dir / ".complete"
    if done.exists() and _intact(done, list(outputs.values())):
        return outputs
    with _locked(build_dir.with_suffix(".lock"), f"'{name}'"):
        if done.exists() and _intact(done, list(outputs.values())):
            return outputs
        private = _private_dir(build_dir)
        ninja = ensure_ninja_on_path()
        lines = [
            f"cflags = {' '.join(cflags)}",
            "rule cc_shared",
            f"  command = {cc} $cflags -shared -fPIC $in -o $out",
            "  description = CC $out",
            "",
        ]
        lines += [f"build {outputs[s.stem].name}: cc_shared {s}" for s in sources]
        (private / "build.ninja").write_text("\n".join(lines) + "\n")
        verbose = verbose_builds()
        shown = _showing(f"'{name}'")
        try:
            with shown:
                status, output = run_ninja(
                    ninja_command(ninja, verbose), str(private), shown.status, _echo(shown, verbose)
                )
                if status != 0:
                    raise NativeBuildError(f"building {name} failed:\n{output}")
        except BaseException:
            shutil.rmtree(private, ignore_errors=True)
            raise
        _seal(private / done.name, [private / o.name for o in outputs.values()])
        _move_into_place(private, build_dir)
        logger.info("built %s in %.2f s at %s", name, shown.seconds, build_dir)
    return outputs
