"""The package's import graph, read from the source: no module of torchada or torchada_hooks is
part of an import cycle (imports inside functions count, ``TYPE_CHECKING`` ones do not), the
subsystems are named by module path in one place, and nothing outside the simulator reaches into
it through a module name in a string."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("torchada", "torchada_hooks")
# The simulated torch_musa is a package of its own (``torch_musa``), not a torchada module.
SIMULATED_SITE = ROOT / "torchada" / "_simulator" / "site"


def _modules() -> Dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if SIMULATED_SITE in path.parents:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> Set[int]:
    skip: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            skip.update(id(inner) for part in node.body for inner in ast.walk(part))
    return skip


def _imports(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip = _type_checking_nodes(tree)
    found: Set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
    return found


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (or a module importing itself)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_is_part_of_an_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "torchada._cuda.redirect" in graph["torchada._activation"]  # the reader reads
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_subsystems_are_modules_with_an_install_entry():
    from torchada import _activation

    modules = _modules()
    for name, module_name in _activation.SUBSYSTEMS.items():
        assert name == name.lower() and module_name in modules, (name, module_name)
        tree = ast.parse(modules[module_name].read_text(encoding="utf-8"))
        entries = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "install"]
        assert len(entries) == 1, module_name
        assert [a.arg for a in entries[0].args.args] == ["patcher"], module_name


def test_no_module_name_in_a_string_reaches_the_simulator():
    for name, path in _modules().items():
        if name.startswith("torchada._simulator"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        assert not arg.value.startswith(("torchada._simulator", "torch_musa")), name


def test_importing_core_loads_nothing_else():
    assert importlib.import_module("torchada._core").__doc__
    tree = ast.parse((ROOT / "torchada" / "_core" / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
