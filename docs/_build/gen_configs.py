"""The page of the shipped training configs (``configs.md``), written at build time
(mkdocs-gen-files) from the configs themselves: each file's header comment (what it mirrors,
its settings and where graphpe differs) and its settings, so the page cannot disagree with
the files."""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]

INTRO = """# The shipped configs

Each file under `configs/` is a `graphpe train --config` (or `graphpe compare --config`)
file. Those that mirror a paper say which, with its settings and **where graphpe differs**;
this page is written from the files when the site is built.
"""


def header(text: str) -> list[str]:
    """The comment lines at the top of a config file, without their ``#``."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return lines


def section(path: Path) -> str:
    """One config's section: its name, its comment as a paragraph (the command lines as a
    code block), its settings as a table."""
    text = path.read_text()
    prose, commands = [], []
    for line in header(text):
        (commands if line.startswith("graphpe ") or line.startswith("--") else prose).append(
            line)
    settings = tomllib.loads(text)
    rows = ["| setting | value |", "| --- | --- |"] + [
        f"| `{key}` | `{value}` |" for key, value in settings.items()]
    description = " ".join(prose) or "(no description)"
    for phrase in ("Where graphpe differs:", "Where this differs:"):
        description = description.replace(phrase, f"**{phrase}**")
    parts = [f"## `configs/{path.name}`", "", description, ""]
    if commands:
        parts += ["```bash", *commands, "```", ""]
    return "\n".join(parts + rows + [""])


def page(root: Path = ROOT) -> str:
    files = sorted((root / "configs").glob("*.toml"))
    return "\n".join([INTRO, *(section(p) for p in files)])


def main() -> None:
    import mkdocs_gen_files

    with mkdocs_gen_files.open("configs.md", "w") as f:
        f.write(page())


if __name__ == "mkdocs_gen_files.__main__" or "mkdocs_gen_files" in sys.modules:
    main()
