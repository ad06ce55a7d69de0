"""The registry's idle draws: each GPU but the measured A100 takes the median of its cited nvidia-smi readings, and the docs list them."""

from __future__ import annotations

import re

import pytest

from pipelines.home.paths import REPO_ROOT
from pipelines.vocabulary import A100_MEASURED_IDLE_W, GPU_BY_NAME, GPUS
from pipelines.vocabulary.idle import IDLE_READINGS, idle_source, readings

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def test_each_gpu_but_the_measured_a100_idles_at_the_median_of_its_readings() -> None:
    for gpu in GPUS:
        if gpu.name == "a100":
            assert gpu.idle_w == A100_MEASURED_IDLE_W and gpu.idle_source.startswith("measured:")
            continue
        watts = sorted(r.watts for r in IDLE_READINGS if r.gpu == gpu.name)
        middle = len(watts) // 2
        by_hand = watts[middle] if len(watts) % 2 else (watts[middle - 1] + watts[middle]) / 2
        assert watts and gpu.idle_w == by_hand, gpu.name
        assert gpu.idle_source == idle_source(gpu.name) and "pipelines.vocabulary.idle.IDLE_READINGS" in gpu.idle_source
    # the values the docs' tables and numbers were computed with (docs: Cluster power, Idle draw and Fleet energy)
    assert {g.name: g.idle_w for g in GPUS} == {"v100": 36, "a40": 27.5, "rtx6000": 43, "p100": 27, "a10": 81, "t4": 13, "a100": 63.6}
    assert idle_source("a10").startswith("one cited public nvidia-smi reading of an idle board (81 W, P0;")
    assert idle_source("t4").startswith("median of 7 cited public nvidia-smi readings of an idle board (9-30 W, P0/P8;")


def test_every_reading_names_a_registry_gpu_a_file_at_a_commit_and_a_draw_below_its_tdp() -> None:
    assert len(IDLE_READINGS) == 22
    for r in IDLE_READINGS:
        gpu = GPU_BY_NAME[r.gpu]
        assert gpu.name != "a100" and 0 < r.watts < gpu.tdp_w, r
        assert re.fullmatch(r"P([0-9]|1[0-2])", r.pstate) and _REPO.match(r.repo) and _COMMIT.match(r.commit) and r.path, r
        assert r.url == f"https://github.com/{r.repo}/blob/{r.commit}/{r.path}".replace("(", "%28").replace(")", "%29")
    pairs = [(r.gpu, r.repo) for r in IDLE_READINGS]
    assert len(pairs) == len(set(pairs)), "one reading per repository and GPU"


def test_a_gpu_without_readings_is_refused() -> None:
    with pytest.raises(ValueError, match="no cited idle reading for GPU 'h100'"):
        readings("h100")


def test_the_docs_list_every_reading_and_every_idle_draw() -> None:
    page = (REPO_ROOT / "docs" / "power.md").read_text(encoding="utf-8")
    section = page[page.index("### Idle draw"):page.index("### Fleet energy")]
    for r in IDLE_READINGS:
        row = f"| {GPU_BY_NAME[r.gpu].label} | {r.watts:g} | {r.pstate} | [{r.repo}: `{r.path}`]({r.url}) |"
        assert row in section, row
    for gpu in GPUS:
        assert f"| {gpu.label} | {gpu.tdp_w:g} | {gpu.idle_w:g} |" in section, gpu.name
