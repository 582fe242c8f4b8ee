"""MkDocs hooks of the site's build (``hooks:`` in mkdocs.yml).

The maths: ``pymdownx.arithmatex`` (``generic: true``) marks each formula of a page, the
Markdown pages' ``$...$`` and ``$$...$$`` and the docstrings' (``griffe_rst.py`` writes
their ``:math:`` and ``.. math::`` that way); here each becomes MathML (``mathml.py``), so
the site renders its maths with no script and no network.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mathml import convert_html  # noqa: E402


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    try:
        return convert_html(html)
    except ValueError as error:
        raise PluginError(f"{page.file.src_uri}: {error}") from error
