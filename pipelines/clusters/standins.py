"""Jobs replayed on another GPU's profile (stand-ins): which, and their power between the exported GPU's idle draw and TDP.

An exported GPU type without a profile (an A100, an H100) or no type at all replays on the
fallback profile (``whatif --fallback-gpu``, the V100 by default): the stand-in. Its replayed
power is the stand-in's. With ``--stand-in-power scaled`` each job's Default power per GPU P
(its replayed Default energy over its Default GPU-time) is mapped linearly from the stand-in's
range onto the exported GPU's:

    P' = idle_x + (P - idle_s) x (TDP_x - idle_x) / (TDP_s - idle_s)

(s: the stand-in, x: the exported GPU), and every policy's energy of the job is scaled by P' / P,
so the job's saving ratio is the replay's. A V100 job at 177 W (idle 36 W, TDP 250 W) becomes an
A100 job at 63.6 + 141 x 336.4 / 214 = 285 W. The exported GPU's TDP and idle draw come from
the registry (``pipelines.vocabulary.GPUS``) or from ``--gpu-specs GPU=TDP:IDLE``; a type known
to neither is replayed unscaled, and the report names it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pipelines.clusters.profiles import profile_key
from pipelines.clusters.replayed import RowRuns
from pipelines.vocabulary import GPU_BY_NAME

#: How a stand-in's power is taken (``whatif --stand-in-power``): the stand-in's as replayed, or scaled to the exported GPU.
AS_PROFILED = "as-profiled"
SCALED = "scaled"
STAND_IN_POWER = (AS_PROFILED, SCALED)


@dataclass(frozen=True)
class Spec:
    """A GPU's TDP and idle draw (W), and where they come from."""

    tdp_w: float
    idle_w: float
    source: str


def parse_specs(values: Sequence[str]) -> dict[str, Spec]:
    """``GPU=TDP:IDLE`` (W; ``--gpu-specs``, comma-separated or repeated) -> each GPU's ``Spec``; ``ValueError`` naming the bad one."""
    out: dict[str, Spec] = {}
    for value in (v.strip() for item in values for v in item.split(",") if v.strip()):
        gpu, _, watts = value.partition("=")
        tdp, _, idle = watts.partition(":")
        try:
            tdp_w, idle_w = float(tdp), float(idle)
        except ValueError:
            raise ValueError(f"--gpu-specs {value!r}: give GPU=TDP:IDLE in W, e.g. h100=700:60") from None
        if not gpu.strip() or not (math.isfinite(tdp_w) and math.isfinite(idle_w) and 0 <= idle_w < tdp_w):
            raise ValueError(f"--gpu-specs {value!r}: give GPU=TDP:IDLE in W with 0 <= IDLE < TDP, e.g. h100=700:60")
        out[gpu.strip().lower()] = Spec(tdp_w, idle_w, "--gpu-specs")
    return out


def spec_for(gpu: str | None, specs: Mapping[str, Spec]) -> Spec | None:
    """The TDP and idle draw of an exported GPU type or a profile GPU: the user's (``--gpu-specs``) first, then the registry's;
    names compared in ``profiles.profile_key``'s normal form (``tesla_v100-sxm2-32gb`` is the v100). None: unknown."""
    if gpu is None:
        return None
    key = profile_key(gpu)
    for name, spec in specs.items():
        if profile_key(name) == key:
            return spec
    for name, known in GPU_BY_NAME.items():
        if profile_key(name) == key:
            return Spec(known.tdp_w, known.idle_w, "registry")
    return None


@dataclass(frozen=True)
class PowerScale:
    """A stand-in's power range (``stand_in``) mapped onto the exported GPU's (``exported``); see the module docstring."""

    stand_in: Spec
    exported: Spec

    def power_w(self, replayed_w: np.ndarray) -> np.ndarray:
        """P' of each replayed power per GPU P (W)."""
        s, x = self.stand_in, self.exported
        return x.idle_w + (replayed_w - s.idle_w) * (x.tdp_w - x.idle_w) / (s.tdp_w - s.idle_w)


def scale_runs(runs: RowRuns, scale: PowerScale) -> RowRuns:
    """``runs`` with each job's energies x P' / P, P its Default power per GPU (Default energy / (Default time x GPUs));
    times unchanged. A job whose Default drew nothing keeps its runs."""
    default = runs.runs["default"]
    n = runs.jobs.num_gpu.size
    energy = np.bincount(default.job, weights=default.energy_j, minlength=n)
    gpu_s = np.bincount(default.job, weights=default.time_s, minlength=n) * runs.jobs.num_gpu
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.where(gpu_s > 0, energy / gpu_s, 0.0)
        factor = np.where(power > 0, scale.power_w(power) / power, 1.0)
    return replace(runs, runs={p: replace(r, energy_j=r.energy_j * factor[r.job]) for p, r in runs.runs.items()})
