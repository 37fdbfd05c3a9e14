"""Load every page of the built docs site in headless Chromium and fail on what a reader
would see broken: a console error or uncaught exception, a request that fails or answers
>= 400 (scripts, styles, images), an image that did not decode, a link to a page or
anchor of the site that does not exist, an API page without rendered entries.

    python ci/docs_browser.py [SITE_DIR] [--screenshots DIR]

Serves SITE_DIR (default ``site``) on a free localhost port; drives Debian's ``chromium``
through Playwright (``executable_path``: Playwright's own browser download is not needed).
Saves a few screenshots (default ``site/screenshots``; ``docs/screenshots`` holds the
committed ones). Exit 1 with a list of problems.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path
from urllib.parse import urldefrag, urljoin

SCREENSHOTS = {"index.html": "home.png", "examples.html": "examples.png",
               "api/nn.html": "api-nn.png", "benchmarks.html": "benchmarks.png"}
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")

# what the page reports back: links, anchors, broken images, rendered API entries
_PAGE_FACTS = """() => ({
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  badImages: [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
                                  .map(i => i.src),
  apiEntries: document.querySelectorAll('.doc-object').length,
})"""


def find_chromium() -> str | None:
    """The path of a Chromium executable, or None."""
    env = os.environ.get("XAD_CHROMIUM")
    return env or next((p for p in map(shutil.which, CHROMIUM) if p), None)


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``site`` on a free localhost port in a daemon thread."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def check_page(page, url: str, problems: list[str]) -> dict:  # noqa: ANN001 (playwright)
    """Load ``url``; add what went wrong to ``problems``; return the page's facts."""
    events: list[str] = []
    page.on("console", lambda m: m.type == "error" and events.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: events.append(f"exception: {e}"))
    page.on("requestfailed", lambda r: events.append(f"request failed: {r.url}"))
    page.on("response", lambda r: r.status >= 400 and events.append(f"{r.status}: {r.url}"))
    page.goto(url, wait_until="networkidle")
    facts = page.evaluate(_PAGE_FACTS)
    for _ in range(10):  # a loaded machine: the API page's 2.5 MB were once read part-parsed
        page.wait_for_timeout(500)  # (its later anchors all missing); read until it is still
        again = page.evaluate(_PAGE_FACTS)
        if len(again["ids"]) == len(facts["ids"]) and len(again["links"]) == len(facts["links"]):
            break
        facts = again
    facts["badImages"] and events.append(f"broken images: {facts['badImages']}")
    problems.extend(f"{url}: {e}" for e in events)
    return facts


def check_links(base: str, pages: dict[str, dict], problems: list[str]) -> None:
    """Every link into the site names a loaded page (and, with ``#id``, an element of it)."""
    for url, facts in pages.items():
        for link in facts["links"]:
            target, anchor = urldefrag(link)
            if not target.startswith(base) or not target.endswith(".html"):
                continue  # outside the site, or a file the request check covers
            if target not in pages:
                problems.append(f"{url}: link to a missing page {link}")
            elif anchor and anchor not in pages[target]["ids"]:
                problems.append(f"{url}: link to a missing anchor {link}")


def run(site: Path, shots: Path, chromium: str) -> list[str]:
    """Check every ``*.html`` page of ``site`` (but 404.html); save the screenshots."""
    from playwright.sync_api import sync_playwright
    server, base = serve(site)
    names = sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html")
    problems: list[str] = []
    pages: dict[str, dict] = {}
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for name in names:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            url = urljoin(base, name)
            pages[url] = check_page(page, url, problems)
            if name.startswith("api/") and pages[url]["apiEntries"] == 0:
                problems.append(f"{url}: an API page with no rendered entries")
            if name in SCREENSHOTS:
                page.screenshot(path=str(shots / SCREENSHOTS[name]))
            page.close()
        browser.close()
    server.shutdown()
    check_links(base, pages, problems)
    print(f"docs browser check: {len(names)} pages loaded in {Path(chromium).name}; "
          f"screenshots in {shots}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("site", nargs="?", default="site")
    p.add_argument("--screenshots", default="site/screenshots")
    a = p.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("docs browser check: SKIPPED, no chromium found (apt-get install chromium, "
              "or set XAD_CHROMIUM to a Chromium executable)")
        return 0
    problems = run(Path(a.site), Path(a.screenshots), chromium)
    for line in problems:
        print("docs browser check:", line)
    print(f"docs browser check: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
