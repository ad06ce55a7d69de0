"""The check on every quarantine table (``quarantine/<table>_bad_rows``): WARN when rows were quarantined, with their count
and the most frequent reason. The blocking limits on the quarantined share are the ingested table's own checks."""

import dagster as dg
import polars as pl

NO_ROWS_QUARANTINED = "no_rows_quarantined"


def spec(key: dg.AssetKey) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(NO_ROWS_QUARANTINED, asset=key,
                             description="No row of the sources was quarantined. Warns when some were (never blocking), with their "
                             "count and most frequent reason; each row of this table names its file, line, column and reason.")


def result(key: dg.AssetKey, quarantine: pl.DataFrame) -> dg.AssetCheckResult:
    """``NO_ROWS_QUARANTINED`` over ``quarantine`` (its ``reason`` column): passes when it is empty."""
    reasons = quarantine.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
    if reasons.height:
        top, count = reasons.row(0)
        text = f"{quarantine.height} rows quarantined; most frequent reason ({count} rows): {top}"
    else:
        text = "no row quarantined"
    return dg.AssetCheckResult(asset_key=key, check_name=NO_ROWS_QUARANTINED, passed=quarantine.height == 0,
                               severity=dg.AssetCheckSeverity.WARN, description=text,
                               metadata={"quarantined_rows": quarantine.height, "top_reasons": dg.MetadataValue.json(dict(reasons.head(10).iter_rows()))})
