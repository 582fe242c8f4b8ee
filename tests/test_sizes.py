"""Size bounds on graphpe's code outside the numeric kernels of graphpe/ops: no module over 600
lines and no function over 80 (decorators included), so each piece stays readable whole. The
kernels of ops are exempt: a compiled loop split for its length can cost speed."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "graphpe"
KERNELS = PACKAGE / "ops"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if KERNELS not in p.parents)


def test_no_module_is_over_600_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in _modules()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_is_over_80_lines():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (n := node.end_lineno - start + 1) > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(PACKAGE)}:{node.name}"] = n
    assert long == {}
