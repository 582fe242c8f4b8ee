"""The build's LaTeX to MathML conversion (docs/_build/mathml.py): the commands graphpe's
formulas use come out as MathML, and a formula that would keep a LaTeX command fails."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("latex2mathml")
PATH = Path(__file__).resolve().parents[2] / "docs" / "_build" / "mathml.py"
spec = importlib.util.spec_from_file_location("mathml", PATH)
mathml = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mathml)


def test_formula_becomes_mathml():
    out = mathml.to_mathml(r"\mathrm{hkdiag}_{i,t} = \sum_{k:\ \lambda_k > 0} e^{-t\lambda_k}")
    assert out.startswith("<math") and 'display="inline"' in out and "\\" not in out
    assert "&#x02211;" in out and "&#x003BB;" in out  # the sum and the lambda
    assert 'display="block"' in mathml.to_mathml("a = b", display=True)


def test_fixes_of_the_converter():
    # a delimiter after \big keeps its command's name in latex2mathml; \arg is unknown to it
    assert "&#x02016;" in mathml.to_mathml(r"W \big\Vert_{h} x")
    assert "<mo>arg</mo>" in mathml.to_mathml(r"e^{i \arg c}")


def test_unknown_command_fails():
    with pytest.raises(ValueError, match=r"\\notacommand"):
        mathml.to_mathml(r"\notacommand x")


def test_arithmatex_output_is_replaced():
    page = ('<p>Text <span class="arithmatex">\\(a &lt; b\\)</span>.</p>\n'
            '<div class="arithmatex">\\[\n\\sum_i x_i\n\\]</div>')
    out = mathml.convert_html(page)
    assert "\\(" not in out and "\\[" not in out and out.count("<math") == 2
    # the escaped "<" of the HTML is the formula's "<"
    assert '<span class="arithmatex"><math' in out and "<mo>&#x0003C;</mo>" in out
    assert '<div class="arithmatex"><math' in out and 'display="block"' in out


def test_aligned_lines_become_a_table_of_rows():
    out = mathml.to_mathml(r"\begin{aligned} a &= \frac{1}{2}, \\ c &= d_{i} \end{aligned}",
                           display=True)
    assert out.count("<mtr>") == 2 and out.count("<mtd") == 4 and "<mtable>" in out
    assert "text-align: right" in out and "text-align: left" in out
    assert "<mi>&</mi>" not in out and 'linebreak="newline"' not in out
    # lines without alignment points (a docstring's "x, \\ y"): one left-aligned cell a row
    plain = mathml.to_mathml(r"h = x + 1, \\ o = h \cdot 2", display=True)
    assert plain.count("<mtr>") == 2 and "text-align: right" not in plain
    # braces and an escaped ampersand are not split
    assert "<mtable>" not in mathml.to_mathml(r"a_{\{i\}} = b \& c", display=True)


def test_an_alignment_point_in_inline_maths_fails():
    with pytest.raises(ValueError, match=r"an alignment point \(&\) or a line break"):
        mathml.to_mathml(r"a &= b")
