"""The docstring extension of the API reference rewrites reStructuredText markup as Markdown
and splits grouped ``Args:`` entries so the parser can match each against the signature; it
gives the fields made by ``option``/``setting``/``setting_of`` their real defaults."""

import dataclasses
import importlib
import importlib.util
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")
ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "docs" / "_build" / "griffe_rst.py"
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


@pytest.fixture(scope="module")
def package():
    return griffe.load("graphpe", search_paths=[str(ROOT)], allow_inspection=False,
                       extensions=griffe.load_extensions(griffe_rst.RstMarkup()))


def _declared_classes():
    from graphpe.encodings import encodings
    from graphpe.pretrain import GPSETargets
    classes = {GPSETargets}
    for cls in encodings().values():
        classes.add(cls)
        if cls.transform_class is not None:
            classes.add(cls.transform_class)
    return sorted(classes, key=lambda c: (c.__module__, c.__qualname__))


def test_signatures_show_the_fields_real_defaults(package):
    """For every transform and declaration, each field's default as the signature shows it
    evaluates (in its module) to the field's default at run time, and a keyword-only field is
    keyword-only in the signature."""
    classes = _declared_classes()
    assert len(classes) > 30
    for cls in classes:
        obj = package[cls.__module__.removeprefix("graphpe.") + "." + cls.__qualname__]
        shown = {p.name: p for p in obj.members["__init__"].parameters if p.name != "self"}
        namespace = vars(importlib.import_module(cls.__module__))
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            where = f"{cls.__qualname__}.{field.name}"
            assert field.name in shown, f"{where} is not in the signature"
            param = shown[field.name]
            assert param.default is not None, f"{where}: the signature shows no default"
            assert "option(" not in str(param.default), where
            assert eval(str(param.default), namespace) == field.default, where  # noqa: S307
            assert (param.kind is griffe.ParameterKind.keyword_only) == field.kw_only, where
