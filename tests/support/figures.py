"""What every rendered figure must satisfy: its three files, a PNG that is not blank, its data's columns and rows."""

from __future__ import annotations

from pathlib import Path

import polars as pl

#: A PNG counts as drawn when its grey levels vary and some pixels carry colour (data are drawn
#: in the palette or viridis; an empty axes is white, grey and black only).
MIN_PIXEL_VARIANCE = 0.005
MIN_COLOURED_SHARE = 0.003


def assert_figure(folder: Path, name: str, columns: list[str], rows: int | None = None) -> pl.DataFrame:
    """The three files exist, the PNG is not blank, and the data file has ``columns`` (and ``rows``)."""
    png, pdf, data = (folder / f"{name}{s}" for s in (".png", ".pdf", ".parquet"))
    assert png.stat().st_size > 10_000 and pdf.read_bytes()[:5] == b"%PDF-", name
    import matplotlib.image as mpimg  # imported where a figure is looked at, not by every test worker at collection

    rgb = mpimg.imread(png)[..., :3]
    assert rgb.mean(axis=2).var() > MIN_PIXEL_VARIANCE, f"{name}: blank PNG"
    assert (rgb.max(axis=2) - rgb.min(axis=2) > 0.15).mean() > MIN_COLOURED_SHARE, f"{name}: no data drawn"
    frame = pl.read_parquet(data)
    assert frame.columns == columns, name
    assert frame.height > 0 if rows is None else frame.height == rows, (name, frame.height)
    return frame
