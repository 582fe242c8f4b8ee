"""A griffe extension for graphpe's API reference: it rewrites the docstrings' markup and the
signatures' defaults.

The docstrings are written in reStructuredText markup inside Google-style sections; what
Markdown does not read is rewritten:

- ``:func:`name``` (and ``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:mod:``) becomes
  the code span ``name`` (a leading ``~`` dropped);
- ``:math:`x``` becomes ``$x$`` and a ``.. math::`` directive a ``$$`` block of its formula,
  which ``pymdownx.arithmatex`` marks and the build's hook turns into MathML (``mathml.py``);
- ``::`` ending a paragraph (a literal block follows) becomes ``:``, and the indented literal
  block a fenced one;
- an ``Args:`` entry naming several parameters (``channels, layers: ...`` or
  ``node_vocab / node_dim: ...``) becomes one entry per parameter with the same description,
  so the Google-style parser can match each against the signature.

Transforms and encodings declare their options as dataclass fields made by graphpe's helpers,
``k: int = option(8, check_positive_int)``, ``setting(...)`` or
``walk_length: int = setting_of(RWSE, "walk_length")``. Griffe reads the call as the field's
default, so the signatures would show it; each such field's default becomes the value the
call gives (``option``'s and ``setting``'s first argument; for ``setting_of`` its ``default=``
or else the transform's option's default, found in the loaded package), and a keyword-only
option (``kw_only=True``) stays keyword-only in the signature. A class decorated with
``@register`` (made a frozen dataclass at run time) is marked as a dataclass, so its
signature lists its fields too.

The source is not changed; only what the API reference shows.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

logger = griffe.get_logger(__name__)

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


# graphpe's helpers that make a dataclass field: option(default, check, *, key, kw_only),
# setting(default, check), setting_of(transform_class, name, default=...)
OPTION = "graphpe.encodings.transform.option"
SETTING = "graphpe.encodings.registry.setting"
SETTING_OF = "graphpe.encodings.registry.setting_of"
# a class decorator that makes its class a dataclass (graphpe.encodings' declarations)
REGISTER = "graphpe.encodings.registry.register"
_HELPERS = (OPTION, SETTING, SETTING_OF)
_FIELD = griffe.ExprName("field", parent="dataclasses")
_DATACLASS = griffe.ExprName("dataclass", parent="dataclasses")


def _arguments(call: griffe.ExprCall) -> tuple[list[Any], dict[str, Any]]:
    """``call``'s positional arguments and its keyword arguments by name."""
    positional, keywords = [], {}
    for argument in call.arguments:
        if isinstance(argument, griffe.ExprKeyword):
            keywords[argument.name] = argument.value
        else:
            positional.append(argument)
    return positional, keywords


def _helper(value: Any) -> str | None:
    """Which helper ``value`` calls (its canonical path), None when it is no such call."""
    if not isinstance(value, griffe.ExprCall):
        return None
    try:
        path = value.canonical_path
    except Exception:  # noqa: BLE001 - an unresolvable name is not one of the helpers
        return None
    return path if path in _HELPERS else None


def field_default(call: griffe.ExprCall, collection: Any) -> str | griffe.Expr:
    """The default of the field that the helper ``call`` makes; ``collection`` (griffe's
    modules) finds a ``setting_of``'s transform. Raises ``LookupError`` when it cannot."""
    positional, keywords = _arguments(call)
    if "default" in keywords:
        return keywords["default"]
    if _helper(call) != SETTING_OF:
        if not positional:
            raise LookupError(f"{call} gives no default")
        return positional[0]
    if len(positional) < 2:
        raise LookupError(f"{call} names no transform option")
    transform, name = positional[0], ast.literal_eval(str(positional[1]))
    path = transform.canonical_path if isinstance(transform, griffe.Expr) else str(transform)
    try:
        option = collection[path].members[name]
    except (KeyError, AttributeError) as error:
        raise LookupError(f"{call}: no option {name!r} found on {path}") from error
    if _helper(option.value) is None:
        raise LookupError(f"{call}: {path}.{name} is not declared with option(...)")
    return field_default(option.value, collection)


def _classes(obj: griffe.Object):
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)


def _decorated_with(cls: griffe.Class, path: str) -> bool:
    for decorator in cls.decorators:
        try:
            if isinstance(decorator.value, griffe.Expr) and decorator.value.canonical_path == path:
                return True
        except Exception:  # noqa: BLE001, S112 - an unresolvable decorator is not this one
            continue
    return False


def mark_registered(package: griffe.Module) -> int:
    """Mark each class decorated with ``@register`` (which makes it a frozen dataclass at run
    time) as a dataclass, so griffe's dataclass extension makes its signature from its fields
    (else a declaration's signature would read ``RWSESpec()``); the number marked."""
    count = 0
    for cls in _classes(package):
        if _decorated_with(cls, REGISTER) and not _decorated_with(cls, "dataclasses.dataclass"):
            cls.decorators.append(griffe.Decorator(_DATACLASS, lineno=cls.lineno,
                                                   endlineno=cls.lineno))
            count += 1
    return count


def rewrite_defaults(package: griffe.Module, collection: Any) -> int:
    """Give every field of ``package``'s classes made by a helper its default as value (a
    ``dataclasses.field(default=..., kw_only=True)`` for a keyword-only option, which griffe's
    dataclass extension reads); the number of fields rewritten. The defaults are all found
    before any is rewritten, as a ``setting_of`` reads the transform's ``option`` call."""
    found = []
    for cls in _classes(package):
        for member in cls.members.values():
            if member.is_alias or not member.is_attribute or _helper(member.value) is None:
                continue
            try:
                default = field_default(member.value, collection)
            except LookupError as error:
                # the signature shows the field without a default rather than the call
                logger.warning("%s: %s", member.path, error)
                default = None
            else:
                _, keywords = _arguments(member.value)
                if str(keywords.get("kw_only", "False")) == "True":
                    default = griffe.ExprCall(_FIELD, [griffe.ExprKeyword("default", default),
                                                       griffe.ExprKeyword("kw_only", "True")])
            found.append((member, default))
    for member, default in found:
        member.value = default
    return sum(default is not None for _, default in found)


class RstMarkup(griffe.Extension):
    """Rewrite every docstring once, when griffe has loaded its object; once the package is
    loaded, mark the ``@register`` classes as dataclasses and rewrite the defaults of the
    helpers' fields (before griffe's dataclass extension, which runs last, makes the
    ``__init__`` signatures from them)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        mark_registered(pkg)
        rewrite_defaults(pkg, loader.modules_collection)
