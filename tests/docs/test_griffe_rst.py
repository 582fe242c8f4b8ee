"""The docstring extension of the API reference rewrites reStructuredText markup as Markdown
and splits grouped ``Args:`` entries so the parser can match each against the signature."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("griffe")
PATH = Path(__file__).resolve().parents[2] / "docs" / "_build" / "griffe_rst.py"
spec = importlib.util.spec_from_file_location("griffe_rst", PATH)
griffe_rst = importlib.util.module_from_spec(spec)
spec.loader.exec_module(griffe_rst)


def test_roles_math_and_literal_blocks():
    text = ("See :func:`~graphpe.ops.degree` and :class:`X`, :math:` x_i `.\n\n"
            ".. math:: a = b\n\nExample::\n\n    x = 1\n\nAfter.")
    out = griffe_rst.convert(text)
    assert "See `graphpe.ops.degree` and `X`, $x_i$." in out
    assert "$$\na = b\n$$" in out
    assert "Example:\n\n```text\nx = 1\n```" in out and out.endswith("After.")


def test_grouped_args_are_split():
    text = "Args:\n    a, b: widths\n        of both.\n    c / d: one of two.\nReturns:\n    x"
    out = griffe_rst.convert(text)
    assert "    a: widths\n        of both.\n    b: widths\n        of both." in out
    assert "    c: one of two.\n    d: one of two." in out
    assert out.endswith("Returns:\n    x")


def test_math_block_is_one_paragraph():
    text = "Intro.\n\n.. math::\n\n    a = b\n\n    + c\n\nAfter."
    out = griffe_rst.convert(text)
    assert "\n\n$$\na = b\n+ c\n$$\n\nAfter." in out  # no blank line inside
