// Loads each page of the built site into an iframe of a given width (the harness page's
// hash: "#<width>"), measures what a reader would see cut or broken, and writes the findings
// as JSON into <pre id="layout-check"> for `chromium --dump-dom` to print.
//   table_wider_than_column: a table box past the right edge of the content column
//   api_table_cut: an API parameter table whose last column (Default) is out of view
//   page_scrolls_sideways: the page itself is wider than the window
//   maths_markup: a rendered formula whose text holds a literal "&" or "\"
//   maths_runs_off: a block formula past the column, not inside a scroll box
(function () {
  const width = parseInt(location.hash.slice(1), 10);
  const pages = JSON.parse(document.getElementById("pages").textContent);
  const frame = document.getElementById("frame");
  frame.style.width = width + "px";
  const findings = [];

  function scrollsSideways(el) {
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const overflow = getComputedStyle(node).overflowX;
      if (overflow === "auto" || overflow === "scroll") return true;
    }
    return false;
  }

  function measure(page) {
    const doc = frame.contentDocument;
    const win = frame.contentWindow;
    const note = (kind, detail) => findings.push({page, width, kind, detail});
    const root = doc.documentElement;
    if (root.scrollWidth > root.clientWidth + 1) {
      note("page_scrolls_sideways", `${root.scrollWidth} px in a ${root.clientWidth} px window`);
    }
    const column = doc.querySelector(".md-content__inner") || doc.body;
    const right = column.getBoundingClientRect().right;
    for (const table of doc.querySelectorAll(".md-typeset table")) {
      const box = table.getBoundingClientRect();
      const head = Array.from(table.querySelectorAll("th")).map((th) => th.textContent.trim());
      if (box.right > right + 1) {
        note("table_wider_than_column", `${head.join(" | ")}: right edge ${box.right} > ${right}`);
      }
      const last = table.querySelector("tr > th:last-child");
      if (table.closest(".doc-contents") && last) {
        // the last column (Default) must be in view: within the column and within the box
        // that would scroll the table, if any
        let visible = right;
        for (let node = table; node && node !== column; node = node.parentElement) {
          if (getComputedStyle(node).overflowX !== "visible") {
            visible = Math.min(visible, node.getBoundingClientRect().right);
          }
        }
        const edge = last.getBoundingClientRect().right;
        if (edge > visible + 1) {
          note("api_table_cut", `${head.join(" | ")}: column ${last.textContent.trim()} ends ` +
               `at ${edge} px, in view up to ${visible} px`);
        }
      }
    }
    for (const maths of doc.querySelectorAll("math")) {
      const text = maths.textContent;
      if (text.includes("&") || text.includes("\\")) {
        note("maths_markup", text.slice(0, 120));
      }
      // a formula's box can stay within the column while its content runs past it
      const reach = Math.max(maths.getBoundingClientRect().right, ...Array.from(
        maths.querySelectorAll("*"), (part) => part.getBoundingClientRect().right));
      if (maths.getAttribute("display") === "block" && reach > right + 1 &&
          !scrollsSideways(maths)) {
        note("maths_runs_off", text.slice(0, 120));
      }
    }
    return win;
  }

  function next(i) {
    if (i === pages.length) {
      const out = document.createElement("pre");
      out.id = "layout-check";
      out.textContent = JSON.stringify({width, pages: pages.length, findings});
      document.body.appendChild(out);
      return;
    }
    frame.onload = () => setTimeout(() => { measure(pages[i]); next(i + 1); }, 200);
    frame.src = pages[i];
  }
  next(0);
})();
