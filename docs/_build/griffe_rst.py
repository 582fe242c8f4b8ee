"""A griffe extension for graphpe's docstrings, which are written in reStructuredText
markup inside Google-style sections: it rewrites the markup Markdown does not read.

- ``:func:`name``` (and ``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:mod:``) becomes
  the code span ``name`` (a leading ``~`` dropped);
- ``:math:`x``` becomes ``$x$`` and a ``.. math::`` directive a ``$$`` block of its formula,
  which ``pymdownx.arithmatex`` marks and the build's hook turns into MathML (``mathml.py``);
- ``::`` ending a paragraph (a literal block follows) becomes ``:``, and the indented literal
  block a fenced one;
- an ``Args:`` entry naming several parameters (``channels, layers: ...`` or
  ``node_vocab / node_dim: ...``) becomes one entry per parameter with the same description,
  so the Google-style parser can match each against the signature.

The source is not changed; only what the API reference shows.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|data|attr|mod|obj|exc):`~?([^`]+)`")
_MATH_INLINE = re.compile(r":math:`([^`]+)`")


def _blocks(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        math = re.match(r"\.\. math::\s*(.*)$", stripped)
        literal = stripped.endswith("::") and not math
        if math or literal:
            body: list[str] = [math.group(1)] if math and math.group(1) else []
            if literal:
                out.append(line[: len(line) - 1] if not stripped == "::" else "")
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or
                                      len(lines[j]) - len(lines[j].lstrip()) > indent):
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
            while body and not body[0].strip():
                body.pop(0)
            if body:
                depth = min(len(b) - len(b.lstrip()) for b in body if b.strip())
                pad = " " * indent
                if math:  # a $$ block: one paragraph, no blank line inside
                    out += ["", pad + "$$"]
                    out += [pad + b[depth:] for b in body if b.strip()]
                    out += [pad + "$$", ""]
                else:
                    out += ["", pad + "```text"]
                    out += [pad + b[depth:] if b.strip() else "" for b in body]
                    out += [pad + "```", ""]
                i = j
                continue
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


_GROUPED = re.compile(r"^(\s+)([A-Za-z_]\w*(?:\s*[,/]\s*[A-Za-z_]\w*)+):(\s.*)?$")


def _split_grouped(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*(Args|Arguments|Parameters|Keyword Args|Other Parameters):\s*$", line):
            section = len(line) - len(line.lstrip())
        elif line.strip() and section is not None and len(line) - len(line.lstrip()) <= section:
            section = None
        match = _GROUPED.match(line) if section is not None else None
        if not match:
            out.append(line)
            i += 1
            continue
        indent, names, first = match.group(1), match.group(2), match.group(3) or ""
        j = i + 1
        while j < len(lines) and lines[j].strip() and (
                len(lines[j]) - len(lines[j].lstrip()) > len(indent)):
            j += 1
        for name in re.split(r"\s*[,/]\s*", names):
            out.append(f"{indent}{name}:{first}")
            out += lines[i + 1:j]
        i = j
    return "\n".join(out)


def convert(text: str) -> str:
    """The docstring ``text`` with its reStructuredText markup rewritten as Markdown."""
    text = _split_grouped(_blocks(text))
    text = _ROLE.sub(r"`\1`", text)
    return _MATH_INLINE.sub(lambda m: f"${m.group(1).strip()}$", text)


class RstMarkup(griffe.Extension):
    """Rewrite every docstring once, when griffe has loaded its object."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
