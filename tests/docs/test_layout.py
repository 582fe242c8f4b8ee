"""The built site as a reader sees it, in headless Chromium at 1400 and 1000 px: every page
(``layout_check.js`` loads each into a frame of that width) has no table wider than its
column, no API parameter table with a column cut off, no page that scrolls sideways, no
rendered formula showing a literal ``&`` or ``\\`` (an aligned environment the converter did
not turn into a table) and no block formula running off the column outside a scroll box.
A planted page with one of each checks that the checks can fail. Screenshots of the pages
the users look up most are written beside the site (``_layout/``) for a person to look at.

Skipped where no Chromium is installed (Debian: ``apt-get install chromium``; or set
``GRAPHPE_CHROMIUM`` to a Chrome or Chromium binary)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.docs.conftest import DOCS_DEPENDENCIES

HERE = Path(__file__).resolve().parent
WIDTHS = (1400, 1000)
CHROMIUM = os.environ.get("GRAPHPE_CHROMIUM") or next(
    (found for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
     if (found := shutil.which(name))), None)
pytestmark = [DOCS_DEPENDENCIES, pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium to render the site in (Debian: apt-get install "
                             "chromium; or set GRAPHPE_CHROMIUM to a Chrome binary)")]
HARNESS = "_layout.html"
PLANTED = "_planted.html"
# the pages the issue's users read most: the model API with GPSLayer, the fused layers' maths,
# the encodings and their maths
SCREENSHOT_PAGES = ("api/graphpe.nn.html", "api/graphpe.layers.fused.html",
                    "api/graphpe.layers.fused_gine.html", "encodings.html")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--allow-file-access-from-files")
RESULT = re.compile(r'<pre id="layout-check">(\{.*?)</pre>', re.S)


def _planted_page(site: Path) -> str:
    """An API page with one of each fault put first: a parameter table whose cell cannot
    shrink, a table outside the site's table rule (a class) wider than any window, a formula
    with a literal ``&`` and ``\\\\``, a block formula wider than any window."""
    page = (site / "api" / "graphpe.nn.html").read_text(encoding="utf-8")
    wide = "x" * 400
    faults = (
        '<div class="doc-contents"><table><thead><tr><th>Name</th><th>Default</th></tr>'
        '</thead><tbody><tr><td><div style="width:3000px">wide</div></td><td>0</td></tr>'
        '</tbody></table></div><table class="planted" style="width:3000px"><tr><th>wide</th>'
        "</tr></table>"
        "<p><math><mi>a</mi><mo>&amp;</mo><mi>b</mi><mtext>\\\\</mtext></math></p>"
        f'<math display="block"><mtext>{" ".join([wide] * 3)}</mtext></math>')
    return page.replace('<article class="md-content__inner md-typeset">',
                        '<article class="md-content__inner md-typeset">' + faults, 1)


@pytest.fixture(scope="module")
def findings(site) -> dict[int, list[dict]]:
    """The checks' findings at each width, over every page of the site and the planted one."""
    (site / "api" / PLANTED).write_text(_planted_page(site), encoding="utf-8")
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("*.html")
                   if p.name not in ("404.html", HARNESS))
    harness = (
        '<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0}'
        "iframe{height:1000px;border:0;display:block}</style></head><body>"
        f'<iframe id="frame"></iframe><script id="pages" type="application/json">'
        f"{json.dumps(pages)}</script><script>{(HERE / 'layout_check.js').read_text()}"
        "</script></body></html>")
    (site / HARNESS).write_text(harness, encoding="utf-8")
    found = {}
    for width in WIDTHS:
        run = subprocess.run(
            [CHROMIUM, *FLAGS, f"--window-size={width + 40},1040",
             "--virtual-time-budget=600000", "--dump-dom", f"file://{site / HARNESS}#{width}"],
            capture_output=True, text=True, timeout=600)
        match = RESULT.search(run.stdout)
        assert match, f"no result from Chromium at {width} px:\n{run.stderr[-3000:]}"
        result = json.loads(html.unescape(match.group(1)))
        assert result["pages"] == len(pages)
        found[width] = result["findings"]
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_is_cut_or_shows_maths_markup(findings, width):
    real = [f for f in findings[width] if not f["page"].endswith(PLANTED)]
    assert not real, f"{len(real)} layout faults at {width} px:\n" + "\n".join(
        f"{f['page']}: {f['kind']}: {f['detail'][:200]}" for f in real[:40])


@pytest.mark.parametrize("width", WIDTHS)
def test_the_planted_faults_are_found(findings, width):
    kinds = Counter(f["kind"] for f in findings[width] if f["page"].endswith(PLANTED))
    assert set(kinds) == {"table_wider_than_column", "api_table_cut", "maths_markup",
                          "maths_runs_off", "page_scrolls_sideways"}, kinds
    assert kinds["maths_markup"] == 1 and kinds["maths_runs_off"] == 1, kinds


def test_screenshots(site):
    out = site / "_layout"
    out.mkdir(exist_ok=True)
    for page in SCREENSHOT_PAGES:
        for width in WIDTHS:
            shot = out / f"{Path(page).stem}-{width}.png"
            subprocess.run([CHROMIUM, *FLAGS, f"--window-size={width},1000",
                            f"--screenshot={shot}", f"file://{site / page}"],
                           capture_output=True, timeout=120, check=True)
            header = shot.read_bytes()[:24]
            assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{shot} is no PNG"
            assert int.from_bytes(header[16:20], "big") == width, f"{shot}: not {width} px wide"
