"""The peer of bench/bench_cli.py: the Zeus artifact's run_single.py and run_alibaba.py as one script.

Whole process, as a user runs the artifact: parse the options with argparse, read the CSVs with
pandas, drive zeus==0.16.0's published simulator (``Peer`` of zeus_peer.py, which drives it as
the artifact scripts do), print one JSON object per run in the format of ``python -m pipelines
simulate`` (so the two outputs can be compared line for line). Groups run serially in one
process (run_alibaba.py spreads them over a process pool; on 40 groups its start-up would only
add to this side's time).

    python tests/support/zeus_scripts.py single --trace-dir DIR [--dataset ... (run_single.py's options)]
    python tests/support/zeus_scripts.py groups --trace-dir DIR --groups FILE.csv [--gpu v100 --eta_knob 0.5 --beta_knob 2.0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.support is importable

import polars as pl
from zeus._legacy.job import Job

from tests.support.zeus_peer import Peer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["single", "groups"])
    parser.add_argument("--trace-dir", type=Path, required=True)
    parser.add_argument("--groups", type=Path)
    parser.add_argument("--dataset", default="librispeech")
    parser.add_argument("--model", default="deepspeech2")
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--target_metric", type=float, default=40.0)
    parser.add_argument("--max_epochs", type=int, default=16)
    parser.add_argument("--b_0", type=int, default=192)
    parser.add_argument("--gpu", default="v100", choices=["a40", "v100", "p100", "rtx6000"])
    parser.add_argument("--eta_knob", type=float, default=0.5)
    parser.add_argument("--beta_knob", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    peer = Peer(args.trace_dir)
    keys = ("bs", "pl", "energy", "time", "reached")
    out = sys.stdout
    if args.mode == "single":
        job = Job(args.dataset, args.model, args.optimizer, args.target_metric, args.max_epochs, args.b_0)
        for run in peer.single(args.gpu, job, args.eta_knob, args.beta_knob, args.seed):
            out.write(json.dumps(dict(zip(keys, run, strict=True))) + "\n")
    else:
        groups = pl.read_csv(args.groups)
        for group, runs in peer.groups(groups, args.gpu, args.eta_knob, args.beta_knob):
            for run in runs:
                out.write(json.dumps({"group": group, **dict(zip(keys, run, strict=True))}) + "\n")


if __name__ == "__main__":
    main()
