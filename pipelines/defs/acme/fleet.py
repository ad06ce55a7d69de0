"""AcmeTrace's measured distributions: ``fleet_power_cdf`` from the pinned pickles, with the curve rules as blocking checks."""

import polars as pl

from pipelines.contracts.registry import quarantine_key
from pipelines.defs.acme.assets import raw_acme_traces
from pipelines.defs.shared.ingest_assets import CheckOutcome, TableCheck, ingest_asset
from pipelines.ingest import fleet


def _every_curve(table: pl.DataFrame) -> CheckOutcome:
    missing = fleet.missing_curves(table)
    text = "every curve the data sources name is present" if not missing else (
        f"missing curve(s) {', '.join(missing)}: their file is in {quarantine_key('fleet_power_cdf')} with the reason")
    return CheckOutcome(not missing, text, {"missing": missing})


def _non_decreasing(table: pl.DataFrame) -> CheckOutcome:
    rules = fleet.curve_rules(table)
    decreasing, _ = fleet.curve_problems(rules)
    return CheckOutcome(not decreasing, "; ".join(decreasing) or "every curve is non-decreasing in x and in cdf_pct",
                        {"curves": rules.to_dicts()})


def _zero_to_hundred(table: pl.DataFrame) -> CheckOutcome:
    _, span = fleet.curve_problems(fleet.curve_rules(table))
    return CheckOutcome(not span, "; ".join(span) or "every curve runs from cdf_pct 0 to 100", {"problems": span})


fleet_power_cdf = ingest_asset(
    fleet.SPEC,
    description="AcmeTrace's measured distributions (CDF over GPU- or node-time, 15 s DCGM/IPMI samples): per-GPU power of "
    "Seren and Kalos (A100), Seren's GPU- and CPU-node power, GPU utilisation of Seren, Kalos and Philly. From the pinned "
    "pickles, unpickled with numpy arrays admitted only.",
    raw=raw_acme_traces,
    read=lambda p: fleet.read_curves(p.raw),
    sources=list(fleet.FILES),
    # a measured curve missing a point, or a file refused whole, is not a curve to compare against
    max_quarantine_share=0.0,
    checks=[
        TableCheck("every_curve_present", "Every curve the data sources name is present (a refused file's curves are not).",
                   _every_curve, blocking=True),
        TableCheck("curves_non_decreasing", "Each curve is non-decreasing in x and in cdf_pct along its points.",
                   _non_decreasing, blocking=True),
        TableCheck("curves_span_0_to_100", "Each curve's cdf_pct runs from 0 to 100.", _zero_to_hundred, blocking=True),
    ],
)
