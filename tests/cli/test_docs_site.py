"""The documentation site opens from disk and offline (`make docs` builds it strictly; `make docs-serve` serves it)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from pipelines.home.paths import REPO_ROOT
from tests.cli.test_whatif_html_browser import CHROMIUM, CHROMIUM_ARGS


def test_the_site_links_pages_as_files_with_system_fonts_and_wrapping_command_lines() -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    # site/x.html, not site/x/: from file:// a folder link shows a directory listing
    assert config["use_directory_urls"] is False
    # no Google Fonts (an outside host); the offline plugin (search from disk) with its worker shim from the site, not unpkg.com
    assert config["theme"]["font"] is False and "offline" in config["plugins"]
    assert config["extra"]["polyfills"] == ["javascripts/iframe-worker-shim.js"]
    css = (REPO_ROOT / "docs" / config["extra_css"][0]).read_text()
    assert re.search(r"\.md-typeset \.language-sh pre > code \{\s*white-space: pre-wrap;", css)  # the ```sh blocks wrap
    make = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^docs-serve: .*\n\t.*mkdocs serve --strict -a 127\.0\.0\.1:\$\(DOCS_PORT\)$", make, re.MULTILINE)


def test_the_search_worker_shim_is_npm_iframe_worker_1_0_4_as_published() -> None:
    """The shim is served from the site: the bytes of npm's iframe-worker 1.0.4 ``shim/index.js`` after our licence header."""
    text = (REPO_ROOT / "docs" / "javascripts" / "iframe-worker-shim.js").read_text()
    header, _, shim = text.partition(" */\n")
    assert "MIT License" in header and "iframe-worker 1.0.4" in header
    assert hashlib.sha256(shim.removesuffix("\n").encode()).hexdigest() == "e8e412dbcfea9b7e31b5ffa288d7b6035915e714c542f4176a0cdbe262fc9609"
    assert "unpkg" not in shim and "http" not in shim  # it loads nothing from anywhere


def test_the_404_page_links_relative_to_the_site_root_it_lies_in() -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO_ROOT / "docs" / "hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    # as MkDocs writes 404.html without a site_url: every link from the root of the server
    page = ('<link rel="stylesheet" href="/assets/stylesheets/main.css">\n<a href="/sql.html" class="md-nav__link">\n'
            '<script src="/javascripts/iframe-worker-shim.js"></script>\n<a href="https://squidfunk.github.io/mkdocs-material/">\n'
            '<a href="//cdn.example/x.js">')
    assert hooks.on_post_template(page, "404.html", None) == (
        '<link rel="stylesheet" href="assets/stylesheets/main.css">\n<a href="sql.html" class="md-nav__link">\n'
        '<script src="javascripts/iframe-worker-shim.js"></script>\n<a href="https://squidfunk.github.io/mkdocs-material/">\n'
        '<a href="//cdn.example/x.js">')
    assert hooks.on_post_template(page, "sitemap.xml", None) == page


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"Chromium is not installed ({CHROMIUM}): make setup-browser")
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="the docs extra is not installed: make setup-docs (CI: make docs)")
def test_the_site_searches_from_disk_with_no_request_elsewhere_and_its_404_page_links_work(tmp_path: Path) -> None:
    """The built site opened from file:// in headless Chromium: the search finds this page's subject, every request is for a
    file of the site (the index as a script, the worker through the shim) and none fails; every link of 404.html exists."""
    from playwright.sync_api import sync_playwright

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=REPO_ROOT, check=True,
                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=240)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            requests: list[str] = []
            failed: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
            page.goto((site / "getting-started.html").as_uri())
            page.wait_for_load_state("load")
            page.keyboard.press("/")  # the theme's search shortcut
            page.keyboard.type("postgres")
            page.wait_for_selector(".md-search-result__item", timeout=30_000)
            titles = [t.splitlines()[0] for t in page.locator(".md-search-result__item").all_inner_texts()]
            assert "A team deployment" in titles
            assert failed == [] and [u for u in requests if not u.startswith(site.as_uri())] == []
            assert f"{site.as_uri()}/search/search_index.js" in requests
            page.goto((site / "404.html").as_uri())
            links = page.eval_on_selector_all("a[href], link[href], script[src]", "els => els.map(e => e.href || e.src)")
            local = [u for u in links if u.startswith("file://")]
            assert len(local) > 20 and [u for u in local if not Path(unquote(urlsplit(u).path)).exists()] == []
        finally:
            browser.close()
