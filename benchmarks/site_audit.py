"""A published site as its readers meet it: axe-core per page type, the leaderboard's first screen, page weights.

    python -m benchmarks.site_audit data/publish/<snapshot>

The folder is served over HTTP from 127.0.0.1 and opened in Debian's chromium at 1,280 × 800 and
390 × 844 px, as `e2e/test_site_accessibility.py` opens the test snapshot's site; this runs the
same checks on any published folder (the demo's 25 configurations, a scale snapshot), where the
test's snapshot has three vendors. Per viewport and page type (one page of each type, every
`<details>` opened, plus a vendor's rows filtered as a figure's link opens them): the serious and
critical axe-core nodes by rule, and the page's width. The leaderboard as it first opens (nothing
opened): what lies inside the first screen (headings, the verdict sentence, the summary table's
columns and how many of its rows), the top of the full table. Page weights: every HTML page of
each type (count, mean, largest, total) and the shared files. Writes
`results/site_audit_<folder>.json`; exits 1 when a page has a serious or critical violation or
scrolls sideways.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_assets_tests.helpers import CHROMIUM, CHROMIUM_ARGS, page_kind, page_types, public_task_types
from benchmarks.common import machine, write_result
from benchmarks.site_open import served

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

VIEWPORTS: dict[str, ViewportSize] = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BLOCKING = ("serious", "critical")

# What a reader sees before scrolling: each visible element's box against the viewport.
_FIRST_SCREEN = """() => {
  const inside = el => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth; };
  const text = el => el.innerText.replace(/\\s+/g, ' ').trim();
  const rows = [...document.querySelectorAll('#summary tbody tr')];
  return {
    headings: [...document.querySelectorAll('h1, h2, h3')].filter(inside).map(text),
    verdict: [...document.querySelectorAll('#verdict')].filter(inside).map(text)[0] || null,
    summary_columns: [...document.querySelectorAll('#summary thead th')].filter(inside).map(text),
    summary_rows_inside: rows.filter(inside).length,
    summary_rows: rows.length,
    summary_first_rows: rows.filter(inside).slice(0, 3).map(text),
    all_columns_toggle_inside: [...document.querySelectorAll('#all-columns > summary')].some(inside),
    page_height: document.documentElement.scrollHeight,
  };
}"""


def page_weights(site: Path) -> dict[str, Any]:
    """Bytes of every published HTML page by type, and of the files every page shares."""
    task_types = public_task_types(site)
    sizes: dict[str, list[int]] = defaultdict(list)
    for path in site.rglob("*.html"):
        sizes[page_kind(path.relative_to(site).as_posix(), task_types)].append(path.stat().st_size)
    by_kind = {
        kind: {"pages": len(v), "mean_bytes": round(statistics.mean(v)), "largest_bytes": max(v), "total_bytes": sum(v)}
        for kind, v in sorted(sizes.items())
    }
    shared = {p.name: p.stat().st_size for p in sorted(site.glob("*")) if p.suffix in (".css", ".js")}
    charts = sorted((site / "charts").glob("*")) if (site / "charts").exists() else []
    return {
        "html": by_kind,
        "html_total_bytes": sum(sum(v) for v in sizes.values()),
        "shared_files_bytes": shared,
        "charts_bytes": sum(p.stat().st_size for p in charts),
        "site_bytes": sum(p.stat().st_size for p in site.rglob("*") if p.is_file()),
    }


def audit(site: Path) -> dict[str, Any]:
    """Open the site's page types in chromium at both widths and audit them (see the module's text)."""
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright

    types = page_types(site)
    if "vendor" in types:
        types["vendor (filtered rows)"] = types["vendor"] + "?task=search&verdict=correct#public-rows"
    axe = Axe()
    pages: dict[str, dict[str, Any]] = defaultdict(dict)
    first_screen: dict[str, Any] = {}
    with served(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for name, viewport in VIEWPORTS.items():
                page = browser.new_page(viewport=viewport)
                page.goto(base + "index.html", wait_until="networkidle")
                first_screen[name] = page.evaluate(_FIRST_SCREEN)
                for kind, rel in types.items():
                    page.goto(base + rel, wait_until="networkidle")
                    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
                    violations = [v for v in axe.run(page).response["violations"] if v["impact"] in BLOCKING]
                    pages[kind][name] = {
                        "path": rel,
                        "width_px": page.evaluate("document.documentElement.scrollWidth"),
                        "axe_serious_critical_nodes": sum(len(v["nodes"]) for v in violations),
                        "axe_rules": {v["id"]: len(v["nodes"]) for v in violations},
                    }
                page.close()
        finally:
            browser.close()
    problems = [
        f"{viewport} {kind}: {m['axe_serious_critical_nodes']} serious/critical nodes {m['axe_rules']}, {m['width_px']} px wide"
        for kind, by_viewport in pages.items()
        for viewport, m in by_viewport.items()
        if m["axe_serious_critical_nodes"] or m["width_px"] > VIEWPORTS[viewport]["width"]
    ]
    return {"pages": dict(pages), "leaderboard_first_screen": first_screen, "problems": problems}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="a published folder, e.g. data/publish/web_search-2026-q3")
    args = parser.parse_args()
    site = args.site.resolve()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is not installed (apt-get install chromium)")
    result = {
        "benchmark": f"site_audit_{site.name}",
        "command": f"python -m benchmarks.site_audit {args.site}",
        "machine": machine(),
        "site": str(site),
        **audit(site),
        "weights": page_weights(site),
    }
    result["passed"] = not result["problems"]
    write_result(result["benchmark"], result)
    for kind, by_viewport in result["pages"].items():
        cells = "  ".join(
            f"{v}: {m['axe_serious_critical_nodes']} axe, {m['width_px']} px" for v, m in by_viewport.items()
        )
        print(f"{kind:24} {cells}")
    for viewport, seen in result["leaderboard_first_screen"].items():
        print(
            f"first screen {viewport}: headings {seen['headings']}; verdict {'yes' if seen['verdict'] else 'no'}; "
            f"summary columns {seen['summary_columns']}; rows {seen['summary_rows_inside']} of {seen['summary_rows']}"
        )
    for kind, w in result["weights"]["html"].items():
        print(
            f"{kind:24} {w['pages']:6} pages, mean {w['mean_bytes'] / 1024:7.1f} KiB, largest {w['largest_bytes'] / 1024:7.1f} KiB"
        )
    print("\n".join(result["problems"]) or "no serious or critical violation; no page wider than its window")
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
