"""``whatif --html``: the page opened in headless Chromium (Playwright driving the system's /usr/bin/chromium).

One small generated export (job names carrying markup), replayed by the command line with ``--json``
and ``--html``. In the browser: no console error, every image decoded, nothing
fetched, no horizontal scroll at 1280 px, the export's markup shown as text, and every number on
the page (``data-path`` / ``data-value``) equal to ``--json``'s at that path, its visible text
being that value rounded in the unit shown. Skipped only where Chromium is not installed
(``apt-get install chromium``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pipelines.home.paths import REPO_ROOT
from tests.support.sacct_export import JOB_NAMES, write_export

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Chromium as root in a sandboxed machine with no network: the flags its headless runs need here.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"]
#: Markup in job names: it must reach the page as text, never as markup.
EVIL = '<script>alert("x")</script><b>&amp;'
OPTIONS = ["--timezone", "UTC", "--samples", "3", "--price-per-kwh", "0.25", "--grid-gco2-per-kwh", "380", "--no-progress"]
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason=f"Chromium is not installed ({CHROMIUM}): apt-get install chromium")]


def _with_markup(path: Path) -> None:
    """Prefix every job name of the generated export with ``EVIL`` (sacct prints names as they are)."""
    lines = path.read_text().splitlines(keepends=True)
    out = []
    for line in lines:
        fields = line.split("|")
        if len(fields) > 2 and fields[2] in JOB_NAMES:
            fields[2] = EVIL + fields[2]
        out.append("|".join(fields))
    path.write_text("".join(out))


def _whatif(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipelines", "whatif", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT,
                          timeout=300)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> tuple[Path, Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("report")
    export = folder / "lab.sacct"
    write_export(export, 500, seed=11, timezone="UTC", span_days=12, energy="measured", malformed=2)
    _with_markup(export)
    page = folder / "report.html"
    done = _whatif(str(export), "--trace-dir", str(mirror / "zeus"), *OPTIONS, "--json", "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert f"report -> {page}" in done.stderr
    return export, page, json.loads(done.stdout)  # stdout is --json's one object, as without --html


def _at(report: Any, path: list[str | int]) -> Any:
    for key in path:
        report = report[key]
    return report


def _shown_matches(text: str, value: float, scale: float) -> bool:
    """``text`` holds one number that is ``value / scale`` rounded to the digits it shows."""
    found = NUMBER.findall(text)
    assert len(found) == 1, text
    shown = Decimal(found[0].replace(",", ""))
    exponent = shown.as_tuple().exponent
    assert isinstance(exponent, int)
    half_unit = 0.5 * 10.0**exponent * scale
    return abs(float(shown) * scale - value) <= half_unit * (1 + 1e-9) + 1e-12


def test_the_page_opens_cleanly_and_shows_the_numbers_of_json(made: tuple[Path, Path, dict[str, Any]]) -> None:
    from playwright.sync_api import sync_playwright

    export, page_file, report = made
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.as_uri(), wait_until="load")
            images = page.evaluate("[...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt])")
            widths = page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
            scripts = page.evaluate("document.scripts.length")
            groups = page.evaluate("[...document.querySelectorAll('td.group')].map(td => td.textContent)")
            cells = page.evaluate("[...document.querySelectorAll('[data-path]')].map(e => [e.dataset.path, e.dataset.value, e.dataset.scale, "
                                  "e.textContent])")
            provenance = page.evaluate("document.querySelector('#provenance').textContent")
        finally:
            browser.close()

    assert errors == []
    assert len(images) == 3 and all(complete and w > 0 and h > 0 for complete, w, h, _ in images), images
    assert [r for r in requests if not r.startswith("data:")] == [page_file.as_uri()]  # nothing fetched but the page itself
    assert max(widths[:2]) <= widths[2] == 1280  # no horizontal scroll
    assert scripts == 0 and groups and all(g.count(EVIL) == 1 for g in groups)  # the export's markup is text

    seen = set()
    for path_text, value_text, scale_text, text in cells:
        path = json.loads(path_text)
        value = json.loads(value_text)
        assert _at(report, path) == value, (path, value)
        if value is None:
            assert text == "–", path
        elif isinstance(value, (int, float)):
            assert _shown_matches(text, value, float(scale_text)), (path, value, text)
        seen.add(tuple(path))
    # every figure of every row, with both ends of its interval, and the other sections' numbers are on the page
    rows = [("gpus", k) for k in report["gpus"]] + [("total",)]
    figures = ("default_kwh", "zeus_kwh", "energy_saved_pct", "energy_saved_kwh", "time_saved_pct", "default_peak_kw", "zeus_peak_kw",
               "headroom_gpus")
    wanted = {(*row, f) for row in rows for f in figures} | {(*row, f"{f}_interval", i) for row in rows for f in figures for i in (0, 1)}
    wanted |= {(k,) for k in ("lines", "header_lines", "allocations", "steps_skipped", "quarantined", "gpu_allocations", "cpu_only",
                              "simulated_jobs", "recurring_groups", "fallback_jobs")}
    wanted |= {("total", "cost_saved"), ("total", "co2e_saved_kg"), ("cluster_gpus", "gpus"), ("measured", "measured_kwh"),
               ("measured", "modelled_default_kwh"), ("measured", "ratio_median"), ("total", "fleet", "fleet_energy_saved_pct")}
    wanted |= {("top_groups", i, k) for i in range(len(report["top_groups"])) for k in ("jobs", "default_kwh", "saved_kwh", "saved_pct")}
    assert wanted <= seen, sorted(wanted - seen)
    assert report["quarantined"] == 2 and len(report["top_groups"]) == 10

    sha = hashlib.sha256(export.read_bytes()).hexdigest()
    assert f"file{export.name}" in provenance and sha in provenance and "gpu-energy-pipelines" in provenance
    assert "--seed 0" in provenance and "--samples 3" in provenance  # the options used, given or default
