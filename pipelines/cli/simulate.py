"""``python -m pipelines simulate``: the Zeus simulator from the command line (the artifact's run_single.py / run_alibaba.py).

Both subcommands print one JSON object per job run, ``{"bs", "pl", "energy", "time", "reached"}``
(``"group"`` first in group mode), floats in full precision. Bad input (an option out of range,
unknown dataset or GPU, b0 outside the batch-size set, an empty or malformed group file,
unreadable traces) prints one line to stderr naming the option or file and exits with code 2; a
simulation that cannot proceed exits with code 1.

The artifact's own spellings (``--target_metric``, ``--b_0``, ``--eta_knob``, ...) are accepted
as hidden aliases, so its example commands paste in with ``python -m pipelines simulate single``
in place of ``python run_single.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from pipelines.cli.options import AliasedCommand, beta_knob_option, eta_knob_option, fail, finite, gpu_option
from pipelines.home.paths import find_home
from pipelines.ingest.simulator_inputs import read_group_file, resolve_traces
from pipelines.vocabulary import POLICIES, Job, PolicyName
from pipelines.zeus.errors import SimulationError
from pipelines.zeus.groups import GroupTableError, group_job_spec, replay_groups
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import TraceError, Traces, build_table

_TRACE_DIR = click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with summary_train.csv and summary_power_{gpu}.csv (default: the materialized tables).",
)
#: The artifact scripts' option names (run_single.py, run_alibaba.py) -> ours.
ARTIFACT_ALIASES: dict[str, str] = {
    "--target_metric": "--target-metric",
    "--max_epochs": "--max-epochs",
    "--b_0": "--b0",
    "--eta_knob": "--eta-knob",
    "--beta_knob": "--beta-knob",
    "--num_recurrence": "--num-recurrence",
}


_ETA = eta_knob_option()
_BETA = beta_knob_option()
_GPU = gpu_option()
_POLICY = click.option("--policy", type=click.Choice(POLICIES), default="zeus", show_default=True, help="Zeus or a baseline.")


def _load_traces(trace_dir: Path | None, gpu: str) -> Traces:
    return resolve_traces(trace_dir, find_home(), (gpu,))[0]


def _emit(records: Iterable[dict]) -> None:
    out = sys.stdout
    for record in records:
        out.write(json.dumps(record, allow_nan=False))
        out.write("\n")
    out.flush()


@click.group("simulate")
def cli() -> None:
    """Trace-driven Zeus simulation (identical results to the published simulator)."""


#: run_single.py's defaults: the librispeech job with b0 = 192, used when --dataset is not given.
RUN_SINGLE_DEFAULTS = Job("librispeech", "deepspeech2", "adamw", 40.0, 16, 192)


def _resolve_spec(traces: Traces, gpu: str, dataset: str | None, overrides: dict[str, Any]) -> Job:
    """The job to simulate: run_single.py's defaults, or ``dataset``'s published job, with ``overrides`` on top.

    ``--dataset X`` alone takes X's network, optimizer, target, epoch cap and b0 from the artifact's
    per-workload job table (b0 capped at the largest batch size profiled on ``gpu``).
    """
    base = RUN_SINGLE_DEFAULTS if dataset is None else group_job_spec(traces, gpu, dataset)
    given = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(base, **given)


@cli.command(cls=AliasedCommand, aliases=ARTIFACT_ALIASES)
@click.option("--dataset", default=None, help="Zeus workload  [default: run_single.py's job, librispeech]")
@click.option("--model", default=None, help="Network of the train trace  [default: the dataset's]")
@click.option("--optimizer", default=None, help="[default: the dataset's]")
@click.option("--target-metric", type=float, default=None, callback=finite(-math.inf, math.inf),
              help="Target validation metric  [default: the dataset's]")
@click.option("--max-epochs", type=click.IntRange(min=1), default=None, help="[default: the dataset's]")
@click.option("--b0", type=click.IntRange(min=1), default=None, help="The user's default batch size  [default: the dataset's]")
@_GPU
@_ETA
@_BETA
@click.option("--seed", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--num-recurrence", type=click.IntRange(min=1), default=None, help="Recurrences (default: 2 x |B| x |P|).")
@_TRACE_DIR
@_POLICY
def single(
    dataset: str | None,
    model: str | None,
    optimizer: str | None,
    target_metric: float | None,
    max_epochs: int | None,
    b0: int | None,
    gpu: str,
    eta_knob: float,
    beta_knob: float,
    seed: int,
    num_recurrence: int | None,
    trace_dir: Path | None,
    policy: PolicyName,
) -> None:
    """One job recurring back to back (run_single.py)."""
    overrides = {"network": model, "optimizer": optimizer, "target_metric": target_metric, "max_epochs": max_epochs, "default_bs": b0}
    try:
        traces = _load_traces(trace_dir, gpu)
        if dataset is not None and dataset not in set(traces.train["dataset"].unique().to_list()):
            fail(f"unknown dataset {dataset!r}")
        spec = _resolve_spec(traces, gpu, dataset, overrides)
        table = build_table(traces, gpu, spec)
    except (TraceError, GroupTableError) as exc:
        fail(str(exc))
    if spec.default_bs not in table.batch_sizes:
        fail(f"b0 {spec.default_bs} is not a batch size of {spec.dataset}/{spec.network}/{spec.optimizer} on {gpu}: {list(table.batch_sizes)}")
    if not any(t.target_epochs for t in table.by_batch_size.values()):
        fail(f"the train trace has no runs of {spec.dataset}/{spec.network}/{spec.optimizer} at target metric {spec.target_metric}")
    try:
        runs = simulate_single(table, eta_knob, beta_knob, seed, num_recurrence, policy)
    except SimulationError as exc:
        fail(str(exc), code=1)
    _emit({"bs": r.bs, "pl": r.pl, "energy": r.energy, "time": r.time, "reached": r.reached} for r in runs)


@cli.command(cls=AliasedCommand, aliases=ARTIFACT_ALIASES)
@click.option("--groups", "groups_file", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Group table (.csv, .csv.xz, .parquet).")
@_GPU
@_ETA
@_BETA
@_TRACE_DIR
@_POLICY
def groups(groups_file: Path, gpu: str, eta_knob: float, beta_knob: float, trace_dir: Path | None, policy: PolicyName) -> None:
    """Replay recurring-job groups of a cluster trace (run_alibaba.py)."""
    try:
        table = read_group_file(groups_file)
        traces = _load_traces(trace_dir, gpu)
        result = replay_groups(table, traces, gpu, eta_knob, beta_knob, policy, progress=True)
    except (TraceError, GroupTableError) as exc:
        fail(str(exc))
    except SimulationError as exc:
        fail(str(exc), code=1)
    _emit(
        {"group": g, "bs": bs, "pl": limit, "energy": e, "time": t, "reached": r}
        for g, bs, limit, e, t, r in result.select("group", "bs", "pl", "energy", "time", "reached").iter_rows()
    )
