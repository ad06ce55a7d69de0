"""whatif's knobs, each written once: its option, default, unit, range and help (``Options``).

Every field of ``Options`` that carries a ``Knob`` (``knob(...)``) is one option of
``python -m pipelines whatif``: ``pipelines.cli.whatif`` generates the click options from these
fields (``knob_options``), and the plan the draws replay (``pipelines.clusters.samples.Plan``)
holds the ``Options`` it was made from. The option's name is the knob's ``flag``; its value is the
field of the same name everywhere after it, with one documented rename: ``--eta-knob`` (the Zeus
artifact's spelling) is ``eta`` from the command line to the kernel.

A knob's range is written once, in its ``Knob``: the command line checks it as it reads the option
(``click.IntRange`` or ``in_range`` made from it, so the line names the option before any work), and
``Options`` checks it when made (``KnobError``, a ``ValueError`` naming the option) for callers from
Python, in the same words (``pipelines.vocabulary.ranges``). A choice (``--energy``, ``--meter``, ...)
is checked by the command line's ``click.Choice``, made from the knob's ``choices``; a library
caller passes the module constants. The other fields (``grid``, ``prices``, ``tariff``, ...) are
what the command reads from its input files and its terminal: they have no option of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np

from pipelines.clusters import analogues, anchoring, standins
from pipelines.clusters.workloads import REFERENCE_GPU
from pipelines.contracts.limits import MAX_GCO2_PER_KWH, MAX_PRICE_PER_KWH
from pipelines.ingest.grid import Rate
from pipelines.ingest.grid_files import implausible
from pipelines.ingest.openei import Tariff
from pipelines.vocabulary import BETA_HELP, BETA_RANGE, DEFAULT_BETA, DEFAULT_ETA, ETA_HELP, ETA_RANGE, PAPER_ORDER
from pipelines.vocabulary.ranges import Range

#: How jobs meet GPUs: each on the GPU its allocation names (``as-exported``), or every job on each GPU given.
GpuMode = Literal["as-exported", "every-gpu"]
AS_EXPORTED: GpuMode = "as-exported"
EVERY_GPU: GpuMode = "every-gpu"

#: What the cluster's energy meter (ConsumedEnergyRaw) covers, as the operator declares it (``--meter``): ``gpu`` (the GPUs'
#: own counters, AcctGatherEnergyType=gpu): a metered job's Default energy is its metered energy; ``node`` (the whole node:
#: CPUs, memory, fans) or ``none`` (not declared): the meter is compared with the model only.
Meter = Literal["none", "gpu", "node"]
METERS: tuple[Meter, ...] = ("none", "gpu", "node")
METER_GPU: Meter = "gpu"

#: The longest --horizon (days): a century, past which a projection of today's recurrence rate means nothing.
MAX_HORIZON_DAYS = 36_500.0


@dataclass(frozen=True)
class Knob:
    """One option of ``whatif``: its ``flag`` (``--samples``), ``help`` (as ``--help`` prints it), ``unit`` of its value,
    click ``type`` (``bool``: a flag), allowed ``range`` or ``choices``, ``parse`` (the option's text to the field's value;
    ``ValueError``: its message), ``multiple`` (repeatable) and whether ``--help`` shows the default."""

    flag: str
    help: str
    type: type
    unit: str = ""
    range: Range | None = None
    choices: tuple[str, ...] = ()
    parse: Callable[[Any], Any] | None = None
    multiple: bool = False
    show_default: bool = True


class KnobError(ValueError):
    """A knob outside its range: ``flag`` names the option, ``problem`` says what is wrong (``Range.problem``)."""

    def __init__(self, flag: str, problem: str) -> None:
        super().__init__(f"{flag}: {problem}")
        self.flag, self.problem = flag, problem


def knob(default: Any, flag: str, help: str, type: type, **spec: Any) -> Any:
    """A field of ``Options`` with its default and its ``Knob`` (``spec``: the ``Knob``'s other fields)."""
    return field(default=default, metadata={"knob": Knob(flag, help, type, **spec)})


def parse_gpus(value: str | None) -> tuple[str, ...] | None:
    """``--gpu``: None (not given), ``("as-exported",)``, or the GPUs named (``all``: the published ones)."""
    if value is None:
        return None
    if value.strip().lower() == AS_EXPORTED:
        return (AS_EXPORTED,)
    names = PAPER_ORDER if value.strip().lower() == "all" else tuple(dict.fromkeys(g.strip().lower() for g in value.split(",") if g.strip()))
    if not names or AS_EXPORTED in names:
        raise ValueError("give as-exported, or one GPU or more, comma-separated (v100,a40,rtx6000,p100, or a measured one), or all")
    return names


def parse_gpu_specs(values: tuple[str, ...]) -> tuple[tuple[str, standins.Spec], ...]:
    """``--gpu-specs``: (GPU, ``Spec``) pairs (``standins.parse_specs``)."""
    try:
        return tuple(standins.parse_specs(values).items())
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("--gpu-specs ")) from None


def gpu_name(value: str) -> str:
    """A GPU as the profiles name it (lower case, no surrounding space)."""
    return value.strip().lower()


@dataclass(frozen=True)
class Options:
    """What to replay and how to price it: whatif's knobs (the fields with a ``Knob``), then what the command read.

    ``gpus``: None replays as exported when the export names GPU types (each job on its GPU's
    profile, else on ``fallback_gpu``) and every job on ``fallback_gpu`` otherwise;
    ``("as-exported",)`` forces the first; GPU names replay every job on each. ``samples``: draws
    (1: the single replay of draw 0); ``seed``: the base seed of draws 1 and up.
    """

    gpus: tuple[str, ...] | None = knob(
        None, "--gpu", "as-exported: each job on the GPU its allocation names (its profile, else --fallback-gpu); or GPUs to replay "
        "every job on, comma-separated: v100,a40,rtx6000,p100, a measured GPU, or all  [default: as-exported when the export names GPU "
        "types, else the fallback GPU]", str, parse=parse_gpus, show_default=False)
    fallback_gpu: str = knob(REFERENCE_GPU, "--fallback-gpu", "The profile of jobs whose GPU type has none (or that name no type).", str,
                             parse=gpu_name)
    samples: int = knob(20, "--samples", "Draws of the workload assignment and the optimizer's seeds (1: a single replay); figures are "
                        "medians with a 90 % interval.", int, unit="draws", range=Range(1, integer=True))
    seed: int = knob(0, "--seed", "Base seed of the draws.", int, range=Range(0, integer=True))
    #: Zeus's energy weight: ``--eta-knob`` on the command line, ``eta`` from here to the kernel (``PolicyArrays.eta``).
    eta: float = knob(DEFAULT_ETA, "--eta-knob", ETA_HELP, float, range=ETA_RANGE)
    beta: float = knob(DEFAULT_BETA, "--beta-knob", BETA_HELP, float, range=BETA_RANGE)
    price_per_kwh: float | None = knob(None, "--price-per-kwh", f"Electricity price (per kWh, at most {MAX_PRICE_PER_KWH:,g}): adds cost "
                                       "saved.", float, unit="per kWh", range=Range(0.0, MAX_PRICE_PER_KWH), show_default=False)
    grid_gco2_per_kwh: float | None = knob(None, "--grid-gco2-per-kwh", f"Grid carbon intensity (g CO2e per kWh, at most "
                                           f"{MAX_GCO2_PER_KWH:,}): adds CO2e saved.", float, unit="g CO2e/kWh",
                                           range=Range(0.0, MAX_GCO2_PER_KWH), show_default=False)
    #: A series that does not cover a job's run: use its nearest value (else the job is refused, naming it).
    fill: bool = knob(False, "--fill", "A series that does not cover a job's run: use its nearest value (else refused).", bool,
                      show_default=False)
    #: Also replay a carbon-aware Zeus: each job's eta from the grid series' intensity at its start, linearly from
    #: ``eta_clean`` (None: ``eta``) at the series' lowest to ``eta_dirty`` at its highest (``samples.carbon_etas``).
    carbon_aware: bool = knob(False, "--carbon-aware", "Also replay a carbon-aware Zeus beside plain Zeus: each job's eta from "
                              "--grid-intensity at its start, linearly from --eta-clean at the series' lowest to --eta-dirty at its "
                              "highest.", bool, show_default=False)
    eta_clean: float | None = knob(None, "--eta-clean", "The carbon-aware eta at the series' cleanest hour, in [0, 1]  [default: "
                                   "--eta-knob]", float, range=ETA_RANGE, show_default=False)
    eta_dirty: float = knob(0.9, "--eta-dirty", "The carbon-aware eta at the series' dirtiest hour, in [0, 1].", float, range=ETA_RANGE)
    top: int = knob(10, "--top", "Recurring groups listed.", int, unit="groups", range=Range(0, integer=True))
    cluster_gpus: int | None = knob(None, "--cluster-gpus", "GPUs of your cluster, for the idle draw of fleet energy (at least the trace's "
                                    "peak concurrent GPUs)  [default: the trace's peak concurrent GPUs]", int, unit="GPUs",
                                    range=Range(1, integer=True), show_default=False)
    #: ``anchored``: each job's energy sized to its exported GPU-hours; ``runtime-ratio``: the Zeus artifact's (anchoring.py).
    energy_model: anchoring.EnergyModel = knob(
        anchoring.ANCHORED, "--energy", "anchored: each job's energy is the replay's power for its workload and GPU times its exported "
        "GPU-hours; runtime-ratio: the Zeus artifact's sizing (durations normalised per workload)", str, choices=anchoring.ENERGY_MODELS)
    #: Jobs whose GPU utilisation is below this (%) are idle allocations: not replayed, counted at the idle draw (a notebook
    #: left open, a hung job), not a training run.
    min_gpu_util_pct: float = knob(10.0, "--min-gpu-util", "Jobs below this GPU utilisation (%, gres/gpuutil or gpu_util_pct) are idle "
                                   "allocations: not replayed, counted at the idle draw.", float, unit="%", range=Range(0.0, 100.0))
    #: What the export's meter covers (``METERS``): with ``gpu`` the meter anchors each metered job's energy.
    meter: Meter = knob("none", "--meter", "What the export's ConsumedEnergyRaw meters (AcctGatherEnergyType): gpu, the GPUs' own counters: "
                        "a metered job's Default energy is its metered energy (Zeus's: that times the replay's ratio); node, the whole "
                        "node: compared only; none: compared only.", str, choices=METERS)
    #: Groups with a GPU utilisation play a workload of a consistent Default draw (``utilisation``), or by runtime (``runtime``).
    workloads_by: str = knob(analogues.BY_UTILISATION, "--workloads-by", "How a recurring group with a GPU utilisation gets its Zeus "
                             "workload: one whose Default draw fits the utilisation (docs: Workloads from GPU utilisation), or by "
                             "runtime as a group without one.", str, choices=analogues.WORKLOADS_BY)
    #: A stand-in's power as replayed (``as-profiled``) or mapped onto the exported GPU's idle draw and TDP (``scaled``).
    stand_in_power: str = knob(standins.AS_PROFILED, "--stand-in-power", "A job replayed on another GPU's profile (no profile of its own "
                               "GPU): its power as the stand-in's (as-profiled), or mapped linearly from the stand-in's idle draw..TDP "
                               "onto its own GPU's (scaled; the saving ratio kept).", str, choices=standins.STAND_IN_POWER)
    #: TDP and idle draw of GPUs the registry does not know (``--gpu-specs GPU=TDP:IDLE``), as (name, Spec) pairs.
    gpu_specs: tuple[tuple[str, standins.Spec], ...] = knob(
        (), "--gpu-specs", "GPU=TDP:IDLE (W) of a GPU the package does not know (h100=700:60), comma-separated or repeated: for "
        "--stand-in-power scaled and the workloads picked by GPU utilisation.", str, unit="W", parse=parse_gpu_specs, multiple=True,
        show_default=False)
    #: Project the saving over this many days at the export's recurrence rate (``anchoring.horizon_totals``); None: not.
    horizon_days: float | None = knob(None, "--horizon", "Also project the saving over this many days at the export's recurrence rate (Zeus "
                                      "deployed at its start).", float, unit="days",
                                      range=Range(0.0, MAX_HORIZON_DAYS, lo_open=True, unit="days"), show_default=False)

    progress: bool = False
    #: ``given`` (the export's clock was named) or ``assumed`` (UTC, nothing said).
    timezone_source: str = "given"
    #: Carbon intensity (g CO2e/kWh) and price (per kWh) where and when the energy was used: a region's or a series
    #: (``pipelines.ingest.grid``); they take precedence over the flat ``grid_gco2_per_kwh`` / ``price_per_kwh``.
    grid: Rate | None = None
    prices: Rate | None = None
    #: The currency of ``price_per_kwh`` (ISO 4217, ``--price-unit``); None: not said (a series says its own).
    price_currency: str | None = None
    #: An OpenEI tariff (``pipelines.ingest.openei``): written out as ``prices`` over the jobs' window (``whatif.with_tariff``).
    tariff: Tariff | None = None

    def __post_init__(self) -> None:
        for name, spec in KNOBS.items():
            value = getattr(self, name)
            problem = None if spec.range is None or value is None else spec.range.problem(value)
            if problem is not None:
                raise KnobError(spec.flag, problem)

    def rates(self) -> tuple[Rate | None, Rate | None]:
        """(carbon intensity, price): the series or region given, else the flat option as a constant, else None."""
        grid = self.grid or (None if self.grid_gco2_per_kwh is None else
                             Rate.constant(self.grid_gco2_per_kwh, {"gco2_per_kwh": self.grid_gco2_per_kwh, "source": "--grid-gco2-per-kwh"}))
        prices = self.prices or (None if self.price_per_kwh is None else
                                 Rate.constant(self.price_per_kwh, {"price_per_kwh": self.price_per_kwh, "source": "--price-per-kwh",
                                                                    "currency": self.price_currency, **_warned(self.price_per_kwh)}))
        return grid, prices

    @property
    def clean_eta(self) -> float:
        """The carbon-aware eta at the grid's cleanest: ``eta_clean``, else ``eta``."""
        return self.eta if self.eta_clean is None else self.eta_clean


def _warned(price_per_kwh: float) -> dict[str, str]:
    """``{"warning": ...}`` for an implausible flat price (``grid_files.implausible``), else nothing."""
    warning = implausible(np.array([price_per_kwh]))
    return {"warning": warning} if warning else {}


#: The knobs by field name, in ``Options``' order.
KNOBS: dict[str, Knob] = {f.name: f.metadata["knob"] for f in fields(Options) if "knob" in f.metadata}
#: Each knob's default, by field name.
DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Options) if "knob" in f.metadata}
