"""The built documentation site works opened from disk and shows what the sources mean: the
site is built once (``mkdocs build --strict`` into a temporary folder) and its HTML checked.

- every link and resource of every page (but ``404.html``, a web server's page) is a file of
  the site (file:// has no folder index: a link to ``page/`` shows a directory listing), every
  anchor exists, and no page loads a script or stylesheet from the network;
- search works without a server: the offline plugin's index script, the Web Worker shim (from
  the site, not a CDN) and the search box;
- the maths is MathML: no LaTeX command and no reST maths markup in a page's text outside its
  code examples (``<pre>`` blocks; inline ``<code>`` is checked, as the docstrings' maths was
  once shown as code spans);
- the signatures show the defaults of the fields made by ``option``/``setting``/``setting_of``,
  not the calls;
- the nav file of the API section (``api/SUMMARY.md``) is no page.

Skipped where the docs dependencies (the ``docs`` extra) are not installed.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.conftest import DOCS_DEPENDENCIES

pytestmark = DOCS_DEPENDENCIES

# what raw LaTeX or reST maths markup looks like in a page's text
RAW_MATHS = (r"\mathrm", r"\sum", r"\frac", r"\lambda", r"\tfrac", r"\langle", r"\big",
             ".. math::", ":math:", r"\(", r"\[")
HELPER_CALL = re.compile(r"=\s*(option|setting|setting_of)\(")
# the page a web server shows for a missing address: its links are absolute (from the server's
# root, as it answers at any depth), and on file:// it is never shown
NOT_FOUND = Path("404.html")
SKIPPED = ("pre", "script", "style")  # text the maths check does not read
RESOURCE_TAGS = {"script", "link", "img", "source", "iframe", "audio", "video"}


class Page(HTMLParser):
    """What the checks read from one built page: its links, ids, title, text outside code
    examples, signatures and the number of MathML formulas."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []  # (tag, href or src)
        self.ids: set[str] = set()
        self.title = ""
        self.text: list[str] = []  # outside <pre> (code examples), <script>, <style>
        self.signatures: list[str] = []
        self.maths = 0
        self._skip = 0  # depth inside pre/script/style
        self._in_title = False
        self._signature_depth = 0  # div depth inside a signature, 0 outside one
        self._signature: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.links.append((tag, attrs[name]))
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        if tag in SKIPPED:
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "math":
            self.maths += 1
        if tag == "div":
            if self._signature_depth:
                self._signature_depth += 1
            elif "doc-signature" in (attrs.get("class") or "").split():
                self._signature_depth = 1
                self._signature = []

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in SKIPPED:
            self._skip -= 1

    def handle_endtag(self, tag):
        if tag in SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag == "div" and self._signature_depth:
            self._signature_depth -= 1
            if not self._signature_depth:
                self.signatures.append("".join(self._signature))

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._signature_depth:
            self._signature.append(data)
        if not self._skip:
            self.text.append(data)


@pytest.fixture(scope="module")
def pages(site) -> dict[Path, Page]:
    parsed = {path: Page(path.read_text(encoding="utf-8")) for path in sorted(site.rglob("*.html"))}
    assert len(parsed) > 20, f"only {len(parsed)} pages built"
    return parsed


def _local_target(site: Path, page: Path, url: str) -> tuple[Path, str] | None:
    """The file and the anchor that the relative ``url`` of ``page`` names; None for a link
    off the site (a scheme: https:, mailto:, ...)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    target = (page.parent / path).resolve() if path else page.resolve()
    return target, unquote(parts.fragment)


def test_every_local_link_is_a_file_of_the_site(site, pages):
    bad, external = [], []
    resolved = {path.resolve(): parsed for path, parsed in pages.items()}
    for path, page in pages.items():
        name = path.relative_to(site)
        if name == NOT_FOUND:
            continue
        for tag, url in page.links:
            found = _local_target(site, path, url)
            if found is None:
                if tag in RESOURCE_TAGS:
                    external.append(f"{name}: <{tag}> {url}")
                continue
            target, anchor = found
            if not target.is_file():
                why = "a folder" if target.is_dir() else "missing"
                bad.append(f"{name}: <{tag}> {url} ({why})")
            elif site.resolve() not in target.parents:
                bad.append(f"{name}: <{tag}> {url} (outside the site)")
            elif anchor and target.suffix == ".html" and anchor not in resolved[target].ids:
                bad.append(f"{name}: <{tag}> {url} (no anchor #{anchor})")
    assert not bad, f"{len(bad)} links that file:// cannot follow:\n" + "\n".join(bad[:40])
    assert not external, "resources loaded from the network:\n" + "\n".join(external[:40])


def test_nav_links_are_pages(site, pages):
    """The nav of the home page reaches every page of mkdocs.yml's nav, as ``page.html``."""
    index = pages[site / "index.html"]
    hrefs = {url for tag, url in index.links if tag == "a"}
    for expected in ("guide/precompute.html", "encodings.html", "api/index.html",
                     "api/graphpe.transforms.html", "design-notes.html"):
        assert expected in hrefs, f"index.html links no {expected}"
    assert not [url for url in hrefs if url.endswith("/") and "://" not in url]


def test_search_works_offline(site, pages):
    script = site / "search" / "search_index.js"
    assert script.is_file(), "no search/search_index.js: the offline plugin did not run"
    text = script.read_text(encoding="utf-8")
    assert text.startswith("var __index = ")
    docs = json.loads(text[len("var __index = "):])["docs"]
    assert any(doc["location"].startswith("api/graphpe.transforms.html") for doc in docs)
    for doc in docs:  # a search result's link is a file of the site too
        target, _ = _local_target(site, site / "index.html", doc["location"])
        assert target.is_file(), f"search result {doc['location']!r} is no file"
    raw = (site / "index.html").read_text(encoding="utf-8")
    assert 'data-md-component="search-query"' in raw, "index.html has no search box"
    config = json.loads(re.search(r'<script id="__config" type="application/json">(.*?)'
                                  r"</script>", raw, re.S).group(1))
    assert (site / config["search"]).is_file(), "the search worker's script is missing"
    # on file:// a browser refuses a Web Worker; the shim runs it in an iframe
    shims = [url for tag, url in pages[site / "index.html"].links
             if tag == "script" and "iframe-worker" in url]
    assert shims and (site / shims[0]).is_file(), "index.html loads no local iframe-worker shim"
    assert "IFrameWorker" in (site / shims[0]).read_text(encoding="utf-8")


def test_no_raw_maths(site, pages):
    bad = []
    for path, page in pages.items():
        text = html.unescape("".join(page.text))
        for pattern in RAW_MATHS:
            at = text.find(pattern)
            if at >= 0:
                bad.append(f"{path.relative_to(site)}: {pattern!r} in ...{text[at - 60:at + 60]!r}")
    assert not bad, "raw LaTeX or reST maths outside code examples:\n" + "\n".join(bad[:40])
    transforms = pages[site / "api" / "graphpe.transforms.html"]
    assert transforms.maths > 10, "the transforms' formulas are not MathML"
    assert sum(page.maths for page in pages.values()) > 100


def _signature(pages, site, page: str, name: str) -> str:
    found = [s for s in pages[site / "api" / page].signatures if s.startswith(name + "(")]
    assert found, f"no signature of {name} on {page}"
    return " ".join(found[0].split())


def test_signatures_show_defaults_not_helper_calls(site, pages):
    bad = [f"{path.relative_to(site)}: {' '.join(s.split())[:160]}"
           for path, page in pages.items() for s in page.signatures if HELPER_CALL.search(s)]
    assert not bad, "signatures showing option/setting/setting_of calls:\n" + "\n".join(bad)
    rwse = _signature(pages, site, "graphpe.transforms.html", "RWSE")
    assert "walk_length: int = 16," in rwse
    assert "*, self_loops: bool = True" in rwse  # kw_only=True stays keyword-only
    # setting_of(RWSE, "walk_length"): the transform's default; setting_of(..., default=4)
    assert "walk_length: int = 16" in _signature(pages, site, "graphpe.encodings.walk.html",
                                                 "RWSESpec")
    rfp = _signature(pages, site, "graphpe.encodings.rfp.html", "RFPSpec")
    assert "num_draws: int = 4" in rfp and 'readout: str = "gram"' in rfp


def test_no_summary_page(site, pages):
    assert not list(site.rglob("SUMMARY*")), "the literate-nav file was built as a page"
    titles = [p for p, page in pages.items() if page.title.strip().startswith("SUMMARY")]
    assert not titles
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert not [d for d in index["docs"] if d["title"] == "SUMMARY"]
