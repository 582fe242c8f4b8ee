"""LaTeX to MathML, at build time: the site's maths is MathML, which browsers render natively,
so a page needs no script and no network (it works opened from disk).

``to_mathml`` wraps ``latex2mathml`` with the fixes graphpe's formulas need, and refuses (raises
``ValueError``) a formula whose MathML would still hold a LaTeX command, so a command the
converter does not know fails the build instead of showing up as raw text.
``convert_html`` replaces what ``pymdownx.arithmatex`` (``generic: true``) leaves in a page's
HTML, ``<span class="arithmatex">\\(...\\)</span>`` and ``<div class="arithmatex">\\[...\\]</div>``,
with MathML; the build's hook (``hooks.py``) runs it on every page.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert
from latex2mathml.symbols_parser import convert_symbol

# operator names latex2mathml does not know: written as \operatorname{...} before converting
_OPERATOR_NAMES = re.compile(r"\\(arg)(?![A-Za-z])")
# a delimiter after \big, \Big, ... (\big\Vert, \Big\langle) comes out as the command's name
_LEFT_COMMAND = re.compile(r">\\([A-Za-z]+|[{}|])<")
_ARITHMATEX = re.compile(
    r'<(span|div) class="arithmatex">\s*\\([(\[])(.*?)\\[)\]]\s*</\1>', re.S)


def _symbol(match: re.Match[str]) -> str:
    code = convert_symbol("\\" + match.group(1))
    if code is None:
        return match.group(0)
    return f">&#x{code};<"


def to_mathml(latex: str, display: bool = False) -> str:
    """The MathML ``<math>`` element of the formula ``latex`` (a block formula when
    ``display``)."""
    tex = _OPERATOR_NAMES.sub(r"\\operatorname{\1}", latex.strip())
    out = convert(tex, display="block" if display else "inline")
    out = _LEFT_COMMAND.sub(_symbol, out)
    if "\\" in out:
        left = sorted(set(re.findall(r"\\[A-Za-z]+", out)))
        raise ValueError(f"latex2mathml left {', '.join(left)} in the formula {latex!r}")
    return out


def convert_html(text: str) -> str:
    """``text`` (a page's HTML) with every formula arithmatex marked replaced by MathML."""

    def replace(match: re.Match[str]) -> str:
        tag, opening, latex = match.groups()
        display = opening == "["
        math = to_mathml(html.unescape(latex), display=display)
        return f'<{tag} class="arithmatex">{math}</{tag}>'

    return _ARITHMATEX.sub(replace, text)
