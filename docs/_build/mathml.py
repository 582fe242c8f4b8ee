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


_ALIGNED = re.compile(r"^\\begin\{(aligned|align\*?|split)\}(.*)\\end\{\1\}$", re.S)
_MATH_OPEN = re.compile(r"^<math[^>]*>")


def _top_level_split(tex: str, separator: str) -> list[str]:
    """``tex`` cut at each ``separator`` (``\\\\`` or ``&``) outside braces and inner
    ``\\begin ... \\end`` environments."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        if tex.startswith("\\begin{", i):
            depth += 1
        elif tex.startswith("\\end{", i):
            depth -= 1
        elif tex[i] == "\\" and tex.startswith(separator, i) and depth == 0:
            parts.append(tex[start:i])
            i += len(separator)
            start = i
            continue
        elif tex[i] == "\\":
            i += 2  # an escaped character (\{, \&, \\ of another separator) is one token
            continue
        elif tex[i] == "{":
            depth += 1
        elif tex[i] == "}":
            depth -= 1
        elif tex[i] == separator and depth == 0:
            parts.append(tex[start:i])
            start = i + 1
        i += 1
    parts.append(tex[start:])
    return parts


def _inner(tex: str) -> str:
    """The MathML of ``tex`` without its ``<math>`` element (a table cell's content)."""
    out = _LEFT_COMMAND.sub(_symbol, convert(tex, display="inline"))
    return _MATH_OPEN.sub("", out).removesuffix("</math>")


def _aligned(tex: str) -> str | None:
    """An ``aligned`` block (or lines joined by ``\\\\`` with ``&`` alignment points) as a
    MathML table: one row per line, its ``&``-separated parts in columns aligned right, left,
    right, ... as LaTeX aligns them; None where ``tex`` has neither."""
    match = _ALIGNED.match(tex)
    body = match.group(2) if match else tex
    lines = [line for line in _top_level_split(body, "\\\\") if line.strip()]
    if len(lines) < 2 and not any(len(_top_level_split(line, "&")) > 1 for line in lines):
        return None
    rows, points = [], any(len(_top_level_split(line, "&")) > 1 for line in lines)
    for line in lines:
        cells = _top_level_split(line, "&")
        rows.append("<mtr>" + "".join(
            f'<mtd style="text-align: {"right" if c % 2 == 0 and points else "left"}; '
            f'padding: 0.1em 0">{_inner(cell) if cell.strip() else ""}</mtd>'
            for c, cell in enumerate(cells)) + "</mtr>")
    return ('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mtable>'
            + "".join(rows) + "</mtable></math>")


def to_mathml(latex: str, display: bool = False) -> str:
    """The MathML ``<math>`` element of the formula ``latex`` (a block formula when
    ``display``). A block of several lines (``\\\\``) or alignment points (``&``), in an
    ``aligned`` environment or not, becomes a table with a row per line (latex2mathml would
    print the ``&`` and drop the line breaks)."""
    tex = _OPERATOR_NAMES.sub(r"\\operatorname{\1}", latex.strip())
    out = (_aligned(tex) if display else None) or _LEFT_COMMAND.sub(
        _symbol, convert(tex, display="block" if display else "inline"))
    if "\\" in out:
        left = sorted(set(re.findall(r"\\[A-Za-z]+", out)))
        raise ValueError(f"latex2mathml left {', '.join(left)} in the formula {latex!r}")
    if re.search(r"&(?!#?\w+;)", out) or 'linebreak="newline"' in out:
        raise ValueError(f"an alignment point (&) or a line break (\\\\) would show as text "
                         f"in the formula {latex!r}: give it as a block (.. math::)")
    return out


def convert_html(text: str) -> str:
    """``text`` (a page's HTML) with every formula arithmatex marked replaced by MathML."""

    def replace(match: re.Match[str]) -> str:
        tag, opening, latex = match.groups()
        display = opening == "["
        math = to_mathml(html.unescape(latex), display=display)
        return f'<{tag} class="arithmatex">{math}</{tag}>'

    return _ARITHMATEX.sub(replace, text)
