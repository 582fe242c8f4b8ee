"""API reference pages, generated at build time (mkdocs-gen-files) from the package itself,
so a new module or a new public name appears without editing anything here.

A name is public in a module when the module's ``__all__`` lists it, or, in a module without
``__all__``, when the module defines it (not imported) under a name without a leading
underscore. Each public object is documented once, on the page of the highest module that
makes it public (``graphpe.ops.laplacian_eigenpairs`` on the ``graphpe.ops`` page, not again
under ``graphpe.ops.eigen``); a module gets a page when it makes at least one object public
that no module above it does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import griffe
import mkdocs_gen_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
from griffe_rst import convert  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def public_names(module: griffe.Module) -> list[tuple[str, str]]:
    """``(name, canonical path)`` of what ``module`` makes public, in source order."""
    names = []
    if module.exports is not None:
        for export in module.exports:
            name = export if isinstance(export, str) else export.name
            member = module.members.get(name)
            if member is None or name.startswith("__"):
                continue
            target = member.final_target if member.is_alias else member
            if target.is_module:
                continue
            names.append((name, target.path))
        return names
    for name, member in module.members.items():
        if name.startswith("_") or member.is_alias or member.is_module:
            continue
        names.append((name, member.path))
    return names


def modules(package: griffe.Module) -> list[griffe.Module]:
    """``package`` and every module under it, breadth first (the shallower first)."""
    order, queue = [], [package]
    while queue:
        module = queue.pop(0)
        order.append(module)
        queue += [m for name, m in sorted(module.modules.items()) if not name.startswith("_")]
    return order


def pages(package_name: str = "graphpe") -> dict[str, list[str]]:
    """Module path -> the names its page documents."""
    package = griffe.load(package_name, search_paths=[str(ROOT)], allow_inspection=False,
                          resolve_aliases=True, resolve_external=False)
    documented: set[str] = set()
    result: dict[str, list[str]] = {}
    for module in modules(package):
        own = []
        for name, path in public_names(module):
            if path not in documented:
                documented.add(path)
                own.append(name)
        if own:
            result[module.path] = own
    return result


def main() -> None:
    nav = mkdocs_gen_files.Nav()
    found, summaries = pages(), {}
    package = griffe.load("graphpe", search_paths=[str(ROOT)], allow_inspection=False)
    for module in modules(package):
        doc = module.docstring.value.split("\n\n")[0] if module.docstring else ""
        summaries[module.path] = " ".join(doc.split()).replace("|", "\\|")
    index = ["# API reference", "",
             "Generated from the docstrings: every public name of graphpe, on the page of the "
             "module that makes it public. A package's page holds what it re-exports "
             "(`graphpe.ops.laplacian_eigenpairs` is on the `graphpe.ops` page); a "
             "submodule has a page for what it alone makes public.", "",
             "| module | what it is | public names |", "| --- | --- | --- |"]
    for path, names in found.items():
        doc = f"{path}.md"
        nav[tuple(path.split("."))] = doc
        shown = ", ".join(f"`{n}`" for n in names[:6]) + (", ..." if len(names) > 6 else "")
        summary = convert(summaries.get(path, ""))
        index.append(f"| [`{path}`]({doc}) | {summary} | {shown} |")
        with mkdocs_gen_files.open(f"api/{doc}", "w") as f:
            f.write(f"# `{path}`\n\n::: {path}\n    options:\n      members:\n")
            f.writelines(f"        - {name}\n" for name in names)
        mkdocs_gen_files.set_edit_path(f"api/{doc}", None)
    with mkdocs_gen_files.open("api/index.md", "w") as f:
        f.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("api/SUMMARY.md", "w") as f:
        f.write("* [Overview](index.md)\n")
        f.writelines(nav.build_literate_nav())


main()
