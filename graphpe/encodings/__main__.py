"""``python -m graphpe.encodings PATH``: rewrite the generated table of encodings in the
markdown file at ``PATH`` (``docs/encodings.md``) from the registry."""

import sys

from graphpe.encodings.registry import write_docs_table

write_docs_table(sys.argv[1] if len(sys.argv) > 1 else "docs/encodings.md")
