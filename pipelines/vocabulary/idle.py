"""Cited idle draws: public ``nvidia-smi`` readings of idle boards, one row per reading, each with its file.

A leaf (it imports nothing of the package): the GPU registry (``pipelines.vocabulary.GPUS``) takes the
idle draw of every GPU without a fleet measurement from here, as the median of that GPU's readings.

A reading is the ``Pwr:Usage`` of one board in an ``nvidia-smi`` table that a public GitHub file
shows, where that board is idle: 0% utilisation and at most 16 MiB of memory in use (no job). The
file is pinned by repository, path and commit (``IdleReading.url``). The readings were found by
exact-text search of nvidia-smi rows in public GitHub files and checked against the file at that
commit. Rules:

* one reading per repository and GPU (its first such table, the first idle board in it), so that a
  repository of many notebooks run on one cloud counts once;
* a table copied into several files (or re-headed with another driver version) counts once;
* tables that are templates or obviously made up (``xx`` in place of numbers, a tool that prints a
  stored table) are left out, and so are virtual GPUs (vGPU profiles, HAMi-limited containers).

They are spot readings of bare idle on unknown machines: no CUDA context, whatever persistence mode
and P-state the board was in. A board idles lower in P8 than in P0 (the T4 here: 9-15 W against
28-30 W), so a GPU's median depends on the mix of P-states found, which ``pstate`` records. They are
the weakest numbers in the registry, and the fewer a GPU has, the weaker (the A10 has one, in P0).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class IdleReading:
    """One idle board's draw in a public ``nvidia-smi`` table.

    ``gpu``: the registry name (``pipelines.vocabulary.GPUS``); ``watts``: the ``Pwr:Usage`` nvidia-smi
    printed (W, whole watts); ``pstate``: its performance state (``P0`` .. ``P12``); ``repo``
    (``owner/name``), ``path`` and ``commit`` (40 hex digits): the file at the commit that shows it.
    """

    gpu: str
    watts: float
    pstate: str
    repo: str
    path: str
    commit: str

    @property
    def url(self) -> str:
        """The file at its commit on GitHub."""
        return f"https://github.com/{self.repo}/blob/{self.commit}/{quote(self.path)}"


def _r(gpu: str, watts: float, pstate: str, repo: str, path: str, commit: str) -> IdleReading:
    return IdleReading(gpu, watts, pstate, repo, path, commit)


#: Every cited reading, by GPU. Board: Tesla V100-PCIE (16 or 32 GB), NVIDIA A40, Quadro RTX 6000 (the
#: 260 W board or the 250 W passive one), Tesla P100-PCIE (12 or 16 GB), NVIDIA A10, Tesla T4.
IDLE_READINGS: tuple[IdleReading, ...] = (
    _r("v100", 36, "P0", "cropgeeks/hpc-help", "gpu.rst", "04c51de83a59f3c45bdfc88d64075a880b19306a"),
    _r("v100", 38, "P0", "michhar/darknet-azure-vm-ubuntu-18.04", "README.md", "ce402c4e1527003c718e571f1ab55c3c257fea16"),
    _r("v100", 24, "P0", "PrincetonUniversity/gpu_programming_intro", "04_gpu_tools/README.md",
       "2b7933c293d9ab7619aa0c4a158f21032705d5c0"),
    _r("a40", 22, "P8", "D8A-SCIENCE/hpc-gitbook", "the-batch-system/interactive-jobs.md", "2ecdfb41d5c01d544fb028dc6203c912f3ac7ce5"),
    _r("a40", 33, "P8", "jaseci-labs/vlm-research", "experiments/prompting/kie/issue.md", "1d60add5bf17ab95b07602ad914d6e9d4aa5dfc1"),
    _r("rtx6000", 72, "P0", "linode/docs",
       "docs/products/compute/gpu/_shortguides/gpu-install-driver-with-cuda-shortguide/index.md",
       "f0d25509fe98a4f6eabd0f865d852c8d4bb6e112"),
    _r("rtx6000", 14, "P8", "therlaup/UOHI-HPC", "README.md", "4d8d585ce8735b257a114fc02a20428c8dd9edaf"),
    _r("p100", 29, "P0", "NVIDIA/cloud-native-docs", "gpu-operator/troubleshooting.rst", "52dcb7b8d956784344e241df476de17094a4574c"),
    _r("p100", 23, "P0", "nesi/support-docs", "docs/Batch_Computing/Using_GPUs.md", "16ba8d49880143131202fecbb5f54e2d12b115bf"),
    _r("p100", 33, "P0", "rapidsai-community/notebooks-contrib",
       "the_archive/archived_competition_notebooks/kaggle/ruchi_bhatia_notebooks/tps-march-2021-eda-rapids.ipynb",
       "0188e068c43417bdb1f97f7b46d1234f0d123902"),
    _r("p100", 27, "P0", "roboflow/notebooks", "notebooks/train-yolov4-tiny-object-detection-on-custom-data.ipynb",
       "01b22466d411ed6aaea186cbd56c74e95953a799"),
    _r("p100", 27, "P0", "mrdbourke/pytorch-deep-learning", "00_pytorch_fundamentals.ipynb",
       "baa27b691617461c173ecf3439793cd8cde74e13"),
    _r("p100", 26, "P0", "mrdbourke/tensorflow-deep-learning",
       "04_transfer_learning_in_tensorflow_part_1_feature_extraction.ipynb", "bd065b806249f7b1155e5b1fabd130c5cfc9d184"),
    _r("p100", 27, "P0", "NielsRogge/Transformers-Tutorials",
       "LayoutXLM/Fine_tune_LayoutXLM_on_XFUND_(relation_extraction).ipynb", "1140198d259d5d9e205ba45a5c3b456261fe2491"),
    _r("a10", 81, "P0", "OguzPastirmaci/misc", "oke-dind-gpu/readme.md", "bae3a292e2482a95f8f67c8e91a1af9258ffa48e"),
    _r("t4", 30, "P0", "buds-lab/ashrae-great-energy-predictor-3-solution-analysis", "solutions/rank-3/README.md",
       "2f83b4d4a288bc38ade2626754d2c3ba3861123e"),
    _r("t4", 15, "P8", "MicrosoftDocs/azure-docs",
       "articles/databox-online/azure-stack-edge-gpu-deploy-iot-edge-gpu-sharing.md", "11996a9a4b34029e3398da28ed49f241710c457d"),
    _r("t4", 9, "P8", "NVIDIA/cloud-native-docs", "gpu-telemetry/integrating-telemetry-kubernetes.rst",
       "52dcb7b8d956784344e241df476de17094a4574c"),
    _r("t4", 28, "P0", "rapidsai-community/notebooks-contrib",
       "getting_started_materials/intro_tutorials_and_guides/11_Introduction_to_Strings.ipynb",
       "0188e068c43417bdb1f97f7b46d1234f0d123902"),
    _r("t4", 13, "P8", "roboflow/notebooks", "notebooks/dino-gpt4v-autodistill.ipynb", "01b22466d411ed6aaea186cbd56c74e95953a799"),
    _r("t4", 9, "P8", "mrdbourke/tensorflow-deep-learning",
       "docs/04_transfer_learning_in_tensorflow_part_1_feature_extraction.ipynb", "bd065b806249f7b1155e5b1fabd130c5cfc9d184"),
    _r("t4", 9, "P8", "NielsRogge/Transformers-Tutorials", "Flux/Run_Flux_on_an_8GB_machine.ipynb",
       "1140198d259d5d9e205ba45a5c3b456261fe2491"),
)


def readings(gpu: str) -> tuple[IdleReading, ...]:
    """A GPU's cited readings, in ``IDLE_READINGS`` order; ``ValueError`` for a GPU with none."""
    found = tuple(r for r in IDLE_READINGS if r.gpu == gpu)
    if not found:
        raise ValueError(f"no cited idle reading for GPU {gpu!r} in pipelines.vocabulary.idle.IDLE_READINGS")
    return found


def median_idle_w(gpu: str) -> float:
    """The median of a GPU's cited readings (W)."""
    return float(statistics.median(r.watts for r in readings(gpu)))


def idle_source(gpu: str) -> str:
    """Where a GPU's idle draw comes from: how many readings, their range and P-states, and where they are listed."""
    found = readings(gpu)
    watts = sorted(r.watts for r in found)
    pstates = "/".join(sorted({r.pstate for r in found}))
    span = f"{watts[0]:g} W" if len(watts) == 1 else f"{watts[0]:g}-{watts[-1]:g} W"
    what = "one cited public nvidia-smi reading" if len(found) == 1 else f"median of {len(found)} cited public nvidia-smi readings"
    return f"{what} of an idle board ({span}, {pstates}; pipelines.vocabulary.idle.IDLE_READINGS, docs: Cluster power, Idle draw)"
