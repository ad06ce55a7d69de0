"""``python -m pipelines simulate``: the Zeus simulator from the command line (the artifact's run_single.py / run_alibaba.py).

Both subcommands print one JSON object per job run, ``{"bs", "pl", "energy", "time", "reached"}``
(``"group"`` first in group mode), floats in full precision. Bad input (unknown dataset or GPU,
b0 outside the batch-size set, an empty or malformed group file, unreadable traces) prints one
line to stderr and exits with code 2; a simulation that cannot proceed exits with code 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import click

from pipelines.zeus.errors import SimulationError
from pipelines.zeus.groups import GroupTableError, read_group_file, replay_groups
from pipelines.zeus.policies import POLICIES, PolicyName
from pipelines.zeus.single import simulate_single
from pipelines.zeus.traces import JobSpec, TraceError, Traces, build_table, read_materialized, read_trace_dir

_TRACE_DIR = click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with summary_train.csv and summary_power_{gpu}.csv (default: the materialized tables).",
)
_ETA = click.option("--eta-knob", type=float, default=0.5, show_default=True, help="Energy weight of the hybrid cost, in [0, 1].")
_BETA = click.option("--beta-knob", type=float, default=2.0, show_default=True, help="Early stopping at beta x min cost (inf: never).")
_GPU = click.option("--gpu", default="v100", show_default=True, help="GPU of the power trace.")
_POLICY = click.option("--policy", type=click.Choice(POLICIES), default="zeus", show_default=True, help="Zeus or a baseline.")


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"Error: {' '.join(message.split())}", err=True)
    sys.exit(code)


def _load_traces(trace_dir: Path | None, gpu: str) -> Traces:
    if trace_dir is not None:
        return read_trace_dir(trace_dir, gpus=(gpu,))
    from pipelines.paths import default_paths

    return read_materialized(default_paths().assets)


def _emit(records: Iterable[dict]) -> None:
    out = sys.stdout
    for record in records:
        out.write(json.dumps(record))
        out.write("\n")
    out.flush()


@click.group()
def simulate() -> None:
    """Trace-driven Zeus simulation (identical results to the published simulator)."""


@simulate.command()
@click.option("--dataset", default="librispeech", show_default=True)
@click.option("--model", default="deepspeech2", show_default=True, help="Network of the train trace.")
@click.option("--optimizer", default="adamw", show_default=True)
@click.option("--target-metric", type=float, default=40.0, show_default=True)
@click.option("--max-epochs", type=int, default=16, show_default=True)
@click.option("--b0", type=int, default=192, show_default=True, help="The user's default batch size.")
@_GPU
@_ETA
@_BETA
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--num-recurrence", type=int, default=None, help="Recurrences (default: 2 x |B| x |P|).")
@_TRACE_DIR
@_POLICY
def single(
    dataset: str,
    model: str,
    optimizer: str,
    target_metric: float,
    max_epochs: int,
    b0: int,
    gpu: str,
    eta_knob: float,
    beta_knob: float,
    seed: int,
    num_recurrence: int | None,
    trace_dir: Path | None,
    policy: PolicyName,
) -> None:
    """One job recurring back to back (run_single.py)."""
    spec = JobSpec(dataset, model, optimizer, target_metric, max_epochs, b0)
    try:
        traces = _load_traces(trace_dir, gpu)
        if dataset not in set(traces.train["dataset"].unique().to_list()):
            _fail(f"unknown dataset {dataset!r}")
        table = build_table(traces, gpu, spec)
    except TraceError as exc:
        _fail(str(exc))
    if b0 not in table.batch_sizes:
        _fail(f"b0 {b0} is not a batch size of {dataset}/{model}/{optimizer} on {gpu}: {list(table.batch_sizes)}")
    if not any(t.target_epochs for t in table.by_batch_size.values()):
        _fail(f"the train trace has no runs of {dataset}/{model}/{optimizer} at target metric {target_metric}")
    try:
        runs = simulate_single(table, eta_knob, beta_knob, seed, num_recurrence, policy)
    except SimulationError as exc:
        _fail(str(exc), code=1)
    _emit({"bs": r.bs, "pl": r.pl, "energy": r.energy, "time": r.time, "reached": r.reached} for r in runs)


@simulate.command()
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
        _fail(str(exc))
    except SimulationError as exc:
        _fail(str(exc), code=1)
    _emit(
        {"group": g, "bs": bs, "pl": limit, "energy": e, "time": t, "reached": r}
        for g, bs, limit, e, t, r in result.select("group", "bs", "pl", "energy", "time", "reached").iter_rows()
    )
