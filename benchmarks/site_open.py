"""How fast a published site opens in a real browser: Debian's chromium, driven by Playwright,
the folder served over HTTP from 127.0.0.1 (as any static host would serve it).

Each page is opened in a fresh page of one browser, and the browser's own Navigation Timing is
read once the `load` event has fired: time to DOMContentLoaded and to load, bytes transferred
(the page and everything it pulled in), the number of DOM elements and of resources fetched.
The pages: the leaderboard (`index.html`), the public queries' listing, the first vendor's page,
the first public row's page and the largest HTML page of the site. The leaderboard is opened
once first and not counted: the browser's own start-up is not the site's. Used by `scale_bench` after
each size's publication; `python -m benchmarks.site_open DIR` measures any published folder.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench_assets_tests.helpers import CHROMIUM, CHROMIUM_ARGS  # the browser and flags the browser tests use

LOAD_TARGET_MS = 1000.0  # every measured page fires `load` within a second, served locally

_TIMING = """() => {
  const [n] = performance.getEntriesByType('navigation');
  const resources = performance.getEntriesByType('resource');
  return {
    dom_content_loaded_ms: n.domContentLoadedEventEnd,
    load_ms: n.loadEventEnd,
    transferred_bytes: n.transferSize + resources.reduce((s, r) => s + r.transferSize, 0),
    resources: resources.length,
    dom_elements: document.getElementsByTagName('*').length,
  };
}"""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served(folder: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def pages_to_open(site: Path) -> dict[str, str]:
    """The pages measured, by role: their paths relative to the site (those that exist)."""
    html = sorted(site.rglob("*.html"))
    largest = max(html, key=lambda p: p.stat().st_size, default=None)
    vendors = sorted((site / "vendors").glob("*.html")) if (site / "vendors").exists() else []
    rows = sorted(p for p in (site / "queries").glob("*.html") if not p.name.startswith("index"))
    chosen = {
        "leaderboard": site / "index.html",
        "queries_listing": site / "queries" / "index.html",
        "vendor": vendors[0] if vendors else None,
        "public_row": rows[0] if rows else None,
        "largest": largest,
    }
    return {role: str(p.relative_to(site)) for role, p in chosen.items() if p is not None and p.exists()}


def open_site(site: Path) -> dict[str, Any]:
    """Open the site's pages in chromium: per page, its bytes on disk and the browser's timings.
    Without chromium, says so instead (`available: False`)."""
    if not CHROMIUM.exists():
        return {"available": False, "reason": f"{CHROMIUM} is not installed (apt-get install chromium)"}
    from playwright.sync_api import sync_playwright

    pages = pages_to_open(site)
    measured: dict[str, Any] = {}
    with served(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            warm_up = browser.new_page()
            warm_up.goto(base + "index.html", wait_until="load")
            warm_up.close()
            for role, path in pages.items():
                page = browser.new_page()
                page.goto(base + path, wait_until="load")
                timing = page.evaluate(_TIMING)
                page.close()
                measured[role] = {
                    "path": path,
                    "bytes": (site / path).stat().st_size,
                    **{k: round(v, 1) if isinstance(v, float) else v for k, v in timing.items()},
                }
        finally:
            browser.close()
    slowest = max((m["load_ms"] for m in measured.values()), default=0.0)
    return {
        "available": True,
        "pages": measured,
        "slowest_load_ms": slowest,
        "load_target_ms": LOAD_TARGET_MS,
        "all_under_target": slowest < LOAD_TARGET_MS,
    }


if __name__ == "__main__":
    print(json.dumps(open_site(Path(sys.argv[1])), indent=2))
