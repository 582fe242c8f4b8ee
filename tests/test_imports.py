"""The package's import structure, read from the source with ``ast`` (imports inside functions
included): the layers of docs/layout.md (no import goes up), no cycles between graphpe's
modules, no private name imported across modules, no numba kernel outside graphpe.ops."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphpe"


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> list[tuple[str, str, str]]:
    """``(importer, imported module, name)`` for every ``from graphpe... import name`` and
    ``import graphpe...`` (name ``""``), relative imports resolved."""
    found = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base.split(".")[0] == "graphpe":
                    found += [(name, base, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(name, alias.name, "") for alias in node.names
                          if alias.name.split(".")[0] == "graphpe"]
    return found


def _owner(mods: dict[str, Path], module: str, name: str) -> str | None:
    """The module an import reads: ``module.name`` where that is a module, else ``module``."""
    for candidate in (f"{module}.{name}", module):
        while candidate:
            if candidate in mods:
                return candidate
            candidate = candidate.rpartition(".")[0]
    return None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_between_modules():
    mods = modules()
    edges: dict[str, set[str]] = {name: set() for name in mods}
    for importer, module, name in imports(mods):
        owner = _owner(mods, module, name)
        if owner is not None and owner != importer:
            edges[importer].add(owner)
    assert cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_names_imported_across_modules():
    private = {(importer, module, name) for importer, module, name in imports(modules())
               if name.startswith("_") and not name.startswith("__")}
    assert sorted(private) == []


# graphpe's layers, lowest first, as docs/layout.md draws them: a module imports modules of
# its own layer and of the layers below, never above. The package root (lazy names) is above all.
LAYERS = (
    ("graphpe.ops",),
    ("graphpe.layers",),
    ("graphpe.encodings",),
    ("graphpe.transforms", "graphpe.synthetic", "graphpe.sampling"),
    ("graphpe.nn",),
    ("graphpe.datasets",),
    ("graphpe.train", "graphpe.evaluation", "graphpe.encode", "graphpe.encode_distributed",
     "graphpe.records", "graphpe.run_log",
     "graphpe.runtime", "graphpe.warmup"),
    ("graphpe.pretrain", "graphpe.demo", "graphpe.compare"),
    ("graphpe.cli", "graphpe.__main__"),
)


def layer_of(module: str) -> int | None:
    for level, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return level
    return None


def upward_imports() -> list[tuple[str, str]]:
    mods = modules()
    found = []
    for importer, module, name in imports(mods):
        owner = _owner(mods, module, name)
        low, high = layer_of(importer), layer_of(owner or "")
        if low is not None and high is not None and high > low:
            found.append((importer, owner))
    return sorted(set(found))


def test_every_module_has_a_layer():
    assert [m for m in modules() if m != "graphpe" and layer_of(m) is None] == []


def test_imports_go_down_the_layers():
    assert upward_imports() == []


def test_the_layer_check_sees_an_upward_import():
    assert layer_of("graphpe.ops.eigen.krylov") < layer_of("graphpe.train")
    assert layer_of("graphpe.layers.conv") < layer_of("graphpe.encodings.rfp") < layer_of(
        "graphpe.nn.models")


def numba_uses(source: str) -> list[str]:
    """What in ``source`` defines compiled kernels: an import of numba (or of a module under
    it), a name ``njit`` imported from anywhere, an attribute ``.njit`` (``aot.njit``,
    ``numba.njit``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "numba"]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] == "numba":
                found.append(f"from {node.module} import ...")
            found += [f"from {node.module} import njit" for a in node.names if a.name == "njit"]
        elif isinstance(node, ast.Attribute) and node.attr == "njit":
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_no_compiled_kernel_outside_ops():
    """numba kernels live in graphpe.ops (the layers above call them): no other module imports
    numba or ``njit``."""
    outside = {name: numba_uses(path.read_text()) for name, path in modules().items()
               if layer_of(name) != layer_of("graphpe.ops")}
    assert {name: uses for name, uses in outside.items() if uses} == {}


def test_the_kernel_check_sees_numba():
    assert numba_uses("from graphpe.ops.aot import njit\n") == [
        "from graphpe.ops.aot import njit"]
    assert numba_uses("import numba.core.types\nfrom numba import prange\n") == [
        "import numba.core.types", "from numba import ..."]
    assert numba_uses("from graphpe.ops import aot\n@aot.njit(cache=True)\ndef f(): pass\n") == [
        "aot.njit (line 2)"]
    assert numba_uses("from graphpe.ops.aot import FIRST_COMPILE_NOTICE\n") == []
