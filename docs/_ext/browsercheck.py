"""Open built documentation pages in headless Chromium: every image loads, and a screenshot of each page.

``python docs/_ext/browsercheck.py [build/docs/html] [build/docs-check]`` checks the index and the first
study page that has figures, prints one line per page and exits non-zero on a broken image.
``tests/test_docs.py`` runs the same check where Chromium is installed and the site is built.

How: Chromium loads a small wrapper page holding the documentation page in an iframe (both ``file://``,
hence ``--allow-file-access-from-files``); the wrapper's script waits until every image of the page has
finished loading and writes, for each, its source and ``naturalWidth`` (0 for an image that did not
load) into the DOM, which ``--dump-dom`` prints. A second run takes the screenshot.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--allow-file-access-from-files"]

WRAPPER = """<!DOCTYPE html><html><body>
<iframe id="page" src="{url}" style="width:1280px;height:4000px"></iframe>
<pre id="result"></pre>
<script>
const frame = document.getElementById("page");
frame.addEventListener("load", () => {{
  const imgs = Array.from(frame.contentDocument.images);
  imgs.forEach((img) => {{ img.loading = "eager"; }});
  const settle = () => Promise.all(imgs.map((img) => img.complete ? null
      : new Promise((done) => {{ img.onload = done; img.onerror = done; }})));
  settle().then(() => {{
    document.getElementById("result").textContent = JSON.stringify({{
      title: frame.contentDocument.title,
      images: imgs.map((img) => ({{src: img.getAttribute("src"), width: img.naturalWidth}})),
    }});
  }});
}});
</script></body></html>
"""


def chromium() -> str | None:
    """The Chromium executable (Debian's ``chromium``), or None where it is not installed."""
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    return None


def _run(args: list[str], profile: str, timeout: float) -> str:
    cmd = [chromium() or "chromium", *FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def check_page(page: Path, screenshot: Path, timeout: float = 120.0) -> dict:
    """Load ``page``; return its title and images (``src``, ``width``) and save a screenshot.

    An image whose ``width`` is 0 did not load.
    """
    page = page.resolve()
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "check.html"
        wrapper.write_text(WRAPPER.format(url=html.escape(page.as_uri(), quote=True)))
        dom = _run(["--virtual-time-budget=20000", "--dump-dom", wrapper.as_uri()], f"{tmp}/profile", timeout)
        found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
        if not found or not found.group(1).strip():
            raise RuntimeError(f"{page}: the page did not finish loading in the browser")
        result = json.loads(html.unescape(found.group(1)))
        _run(["--window-size=1280,1600", "--virtual-time-budget=10000", f"--screenshot={screenshot.resolve()}",
              page.as_uri()], f"{tmp}/profile", timeout)
    if not screenshot.is_file():
        raise RuntimeError(f"{page}: chromium wrote no screenshot")
    return result


def pages_to_check(site: Path) -> list[Path]:
    """The index and the first study page (by name) that shows a figure."""
    pages = [site / "index.html"]
    for study in sorted((site / "studies").glob("*.html")):
        if "<img" in study.read_text():
            pages.append(study)
            break
    return pages


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "build/docs/html")
    out = Path(argv[1] if len(argv) > 1 else "build/docs-check")
    if chromium() is None:
        print("chromium is not installed (Debian: apt-get install chromium)")
        return 2
    failed = False
    for page in pages_to_check(site):
        result = check_page(page, out / f"{page.stem}.png")
        broken = [img["src"] for img in result["images"] if not img["width"]]
        failed |= bool(broken)
        print(f"{page}: {len(result['images'])} images, {len(broken)} broken {broken or ''}; "
              f"screenshot {out / (page.stem + '.png')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
