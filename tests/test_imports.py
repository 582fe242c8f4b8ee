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
     "graphpe.records", "graphpe.run_log", "graphpe.train_config", "graphpe.encoding_files",
     "graphpe.runtime", "graphpe.warmup", "graphpe.link"),
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


def module_aliases(source: str, importer: str, mods: dict[str, Path]) -> dict[str, str]:
    """The names ``source`` binds to graphpe modules (``from graphpe.ops import graph``,
    ``import graphpe.ops.graph as g``), function-level imports included."""
    aliases = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = importer if mods[importer].name == "__init__.py" else \
                    importer.rpartition(".")[0]
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in mods:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in mods:
                    aliases[alias.asname] = alias.name
    return aliases


def private_reads(source: str, importer: str, mods: dict[str, Path]) -> list[str]:
    """Reads of another graphpe module's private name through the module object:
    ``module._name`` and ``getattr(module, "_name")``."""
    aliases = {name: module for name, module in module_aliases(source, importer, mods).items()
               if module != importer}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base, attr = node.value.id, node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "getattr" and len(node.args) >= 2
              and isinstance(node.args[0], ast.Name)
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            base, attr = node.args[0].id, node.args[1].value
        else:
            continue
        if base in aliases and attr.startswith("_") and not attr.startswith("__"):
            found.append(f"{importer}: {aliases[base]}.{attr} (line {node.lineno})")
    return found


def dynamic_imports(source: str) -> list[str]:
    """The graphpe modules ``importlib.import_module`` is called on in ``source``, where its
    argument is a string or an f-string starting with one (``f"graphpe.{name}"``: the
    constant part, ``graphpe``); ``"__name__"`` for an f-string starting with the module's
    own name (its children). A module-level constant holding the string counts as the
    string."""
    tree = ast.parse(source)
    constants = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
                == "import_module" and node.args):
            continue
        arg = node.args[0]
        if isinstance(arg, ast.Name) and arg.id in constants:  # EXTENSION = "graphpe._kernels"
            arg = constants[arg.id]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            head = arg.value
        elif isinstance(arg, ast.JoinedStr) and arg.values:
            first = arg.values[0]
            if isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) \
                    and first.value.id == "__name__":
                found.append("__name__")
                continue
            head = first.value if isinstance(first, ast.Constant) else ""
        else:
            continue
        if head.split(".")[0] == "graphpe":
            found.append(head.rstrip("."))
    return found


def dynamic_upward_imports() -> list[tuple[str, str]]:
    mods = modules()
    found = []
    for importer, path in mods.items():
        for target in dynamic_imports(path.read_text()):
            if target == "__name__":
                continue  # the module's own children
            owner = _owner(mods, target, "")
            if owner is None or (owner == "graphpe" and target != "graphpe"):
                continue  # not a Python module of the package: the compiled extension
            low, high = layer_of(importer), layer_of(owner)
            if low is not None and (high is None or high > low):
                found.append((importer, owner))
    return sorted(set(found))


def test_no_private_name_read_through_a_module():
    mods = modules()
    found = [f for name, path in mods.items()
             for f in private_reads(path.read_text(), name, mods)]
    assert found == []


def test_no_dynamic_import_goes_up():
    assert dynamic_upward_imports() == []


def test_the_checks_see_a_private_read_and_a_dynamic_upward_import():
    mods = modules()
    planted = ("from graphpe.ops.walk import sampled\n"
               "import graphpe.ops.graph as g\n"
               "x = sampled._walk_tables\n"
               "def f():\n"
               "    return getattr(g, '_index_range'), g.index_range, sampled.__name__\n")
    assert private_reads(planted, "graphpe.ops.distributed.walk", mods) == [
        "graphpe.ops.distributed.walk: graphpe.ops.walk.sampled._walk_tables (line 3)",
        "graphpe.ops.distributed.walk: graphpe.ops.graph._index_range (line 5)"]
    assert dynamic_imports("import importlib\nimportlib.import_module('graphpe.train')\n"
                           "importlib.import_module(f'graphpe.{x}')\n"
                           "importlib.import_module(f'{__name__}.{x}')\n"
                           "importlib.import_module(user_module)\n"
                           "EXTENSION = 'graphpe._kernels'\nimport_module(EXTENSION)\n") == [
        "graphpe.train", "graphpe", "__name__", "graphpe._kernels"]
    assert layer_of("graphpe.train") > layer_of("graphpe.ops.graph")
