"""MkDocs hooks of the site's build (``hooks:`` in mkdocs.yml).

- The maths: ``pymdownx.arithmatex`` (``generic: true``) marks each formula of a page, the
  Markdown pages' ``$...$`` and ``$$...$$`` and the docstrings' (``griffe_rst.py`` writes
  their ``:math:`` and ``.. math::`` that way); here each becomes MathML (``mathml.py``), so
  the site renders its maths with no script and no network.
- The API section's nav file: ``gen_api.py`` writes ``api/SUMMARY.md`` for literate-nav; once
  literate-nav has read it, it is excluded from the site, so it is no page of its own (nor a
  search result).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files, InclusionLevel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mathml import convert_html  # noqa: E402

NAV_FILES = ("api/SUMMARY.md",)


@event_priority(-200)  # after literate-nav's on_files (-100), which reads the nav files
def on_files(files: Files, config: Any) -> Files:
    for path in NAV_FILES:
        file = files.get_file_from_path(path)
        if file is not None:
            file.inclusion = InclusionLevel.EXCLUDED
    return files


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    try:
        return convert_html(html)
    except ValueError as error:
        raise PluginError(f"{page.file.src_uri}: {error}") from error
