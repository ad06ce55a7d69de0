"""The documentation site opens from disk and offline (`make docs` builds it strictly; `make docs-serve` serves it)."""

from __future__ import annotations

import re

import yaml

from pipelines.home.paths import REPO_ROOT


def test_the_site_links_pages_as_files_with_system_fonts_and_wrapping_command_lines() -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    # site/x.html, not site/x/: from file:// a folder link shows a directory listing
    assert config["use_directory_urls"] is False
    # no Google Fonts (an outside host), nor the offline plugin (it loads a shim from unpkg.com)
    assert config["theme"]["font"] is False and "offline" not in config["plugins"]
    css = (REPO_ROOT / "docs" / config["extra_css"][0]).read_text()
    assert re.search(r"\.md-typeset \.language-sh pre > code \{\s*white-space: pre-wrap;", css)  # the ```sh blocks wrap
    make = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^docs-serve: .*\n\t.*mkdocs serve --strict -a 127\.0\.0\.1:\$\(DOCS_PORT\)$", make, re.MULTILINE)
