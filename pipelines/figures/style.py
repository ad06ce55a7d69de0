"""The one theme of every figure, and the one way figures are written to disk.

Theme: seaborn ``whitegrid`` style, ``paper`` context, ``colorblind`` palette, with font sizes set
so that text stays readable when a figure is printed at its own width: ``SINGLE_COLUMN`` (3.3 in)
or ``DOUBLE_COLUMN`` (7.0 in) wide, never scaled down. Sequential quantities (power limit, batch
size, counts) use ``SEQUENTIAL_CMAP`` (viridis: colorblind-safe and monotone in lightness).

Every figure is saved as ``<name>.png`` (for eyes), ``<name>.pdf`` (for papers) and
``<name>.parquet`` (the numbers plotted, so each can be checked with SQL), each atomically.
Figures are built on ``matplotlib.figure.Figure`` directly (no pyplot state), so a long-running
process never accumulates open figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import matplotlib as mpl
import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipelines.home.atomic import atomic_path, write_parquet_atomic
from pipelines.vocabulary import PAPER_ORDER, ZEUS_DATASETS

#: Figure widths (in) of a two-column paper.
SINGLE_COLUMN = 3.3
DOUBLE_COLUMN = 7.0
PNG_DPI = 200
#: Font sizes (pt) readable at print size.
FONT_SIZE = 8.0
SMALL_FONT_SIZE = 7.0
SEQUENTIAL_CMAP = "viridis"

#: The order of GPUs and datasets in every figure (the Zeus paper's; labels from ``pipelines.vocabulary``).
GPU_ORDER: tuple[str, ...] = PAPER_ORDER
DATASET_ORDER: tuple[str, ...] = ZEUS_DATASETS


#: The project's settings on top of seaborn's theme: print-size fonts, ticks, lines, the PNG's resolution, editable PDF text.
THEME_RC: dict[str, Any] = {
    "font.size": FONT_SIZE,
    "axes.labelsize": FONT_SIZE,
    "axes.titlesize": FONT_SIZE,
    "xtick.labelsize": SMALL_FONT_SIZE,
    "ytick.labelsize": SMALL_FONT_SIZE,
    "legend.fontsize": SMALL_FONT_SIZE,
    "legend.title_fontsize": SMALL_FONT_SIZE,
    "figure.titlesize": FONT_SIZE + 1,
    "axes.titlepad": 3.0,
    "axes.labelpad": 2.0,
    # tick marks are hidden in whitegrid, but their length still offsets the labels:
    # equal major and minor geometry keeps major and minor labels on one baseline.
    **{f"{a}tick.{w}.{k}": v for a in "xy" for w in ("major", "minor") for k, v in (("size", 3.0), ("pad", 2.5))},
    "lines.linewidth": 1.2,
    "lines.markersize": 4.0,
    "grid.linewidth": 0.5,
    "legend.frameon": False,
    "savefig.dpi": PNG_DPI,
    "pdf.fonttype": 42,  # TrueType in the PDF: text stays editable and searchable
    "ps.fonttype": 42,
}

#: seaborn 0.13's colorblind palette (``sns.color_palette("colorblind")``), and the matplotlib colour codes its
#: ``set_theme`` points at it; with ``SEABORN_RC`` what ``apply_light_theme`` sets without importing seaborn (a test
#: holds all three to seaborn's).
COLORBLIND: tuple[str, ...] = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133",
                               "#56b4e9")
COLOR_CODES: dict[str, str | tuple[float, float, float]] = {"b": "#0173b2", "g": "#029e73", "r": "#d55e00", "m": "#cc78bc",
                                                             "y": "#ece133", "c": "#56b4e9", "k": (0.1, 0.1, 0.1)}
#: seaborn's ``whitegrid`` style in its ``paper`` context where they differ from matplotlib's defaults, but ``image.cmap``
#: (seaborn's ``rocket``, registered by importing seaborn; no figure of the light theme draws an image).
SEABORN_RC: dict[str, Any] = {
    "axes.axisbelow": True, "axes.edgecolor": ".8", "axes.grid": True, "axes.labelcolor": ".15", "axes.linewidth": 1.0,
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"], "grid.color": ".8",
    "lines.solid_capstyle": "round", "patch.edgecolor": "w", "patch.force_edgecolor": True, "patch.linewidth": 0.8,
    "text.color": ".15", "xtick.bottom": False, "xtick.color": ".15", "xtick.major.width": 1.0, "xtick.minor.width": 0.8,
    "ytick.color": ".15", "ytick.left": False, "ytick.major.width": 1.0, "ytick.minor.width": 0.8,
}


def apply_theme() -> None:
    """Set the project theme globally (idempotent): whitegrid / paper / colorblind, print-size fonts."""
    import seaborn as sns  # imports scipy: only when a figure is drawn, not when the code location loads

    sns.set_theme(style="whitegrid", context="paper", palette="colorblind", rc=THEME_RC)


def apply_light_theme() -> None:
    """``apply_theme``'s settings without importing seaborn (and its scipy: seconds of a ``whatif --html``): the same
    rcParams but ``image.cmap``, the same colour cycle and colour codes."""
    from cycler import cycler
    from matplotlib import colors

    settings: dict[str, Any] = {**SEABORN_RC, **THEME_RC, "axes.prop_cycle": cycler("color", [colors.to_rgb(c) for c in COLORBLIND])}
    cast(Any, mpl.rcParams).update(settings)  # matplotlib types its keys as literals; these are rcParams' own names
    for code, color in COLOR_CODES.items():
        colors.colorConverter.colors[code] = colors.to_rgb(color)  # as seaborn's set_color_codes does


def palette(n: int) -> list[tuple[float, float, float]]:
    """The first ``n`` colours of the colorblind palette (cycled past 10)."""
    from matplotlib import colors

    base = [colors.to_rgb(c) for c in COLORBLIND]
    return [base[i % len(base)] for i in range(n)]


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, light: bool = False,
               **subplot_kw: Any) -> tuple[Figure, np.ndarray]:
    """A themed, constrained-layout figure of ``width`` x ``height`` inches and its axes (``squeeze=False``); ``light``: the
    theme set without seaborn (``apply_light_theme``)."""
    if light:
        apply_light_theme()
    else:
        apply_theme()
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
    return fig, axes


def log_scale(ax: Axes, axis: str = "both") -> None:
    """Log scale on ``axis`` ("x", "y" or "both") with readable tick labels.

    Decades are always labelled: as plain numbers (0.01, 100), or all as 10^k when the axis spans
    more than three decades or leaves [1e-3, 1e5). Between decades, 2 and 5 x 10^k are labelled
    when the axis spans at most two decades, every integer multiple when half a decade or less,
    so short ranges still show numbers and long ones do not crowd.
    """
    for name in ("x", "y") if axis == "both" else (axis,):
        getattr(ax, f"set_{name}scale")("log")
        target = getattr(ax, f"{name}axis")
        target.set_major_formatter(LogTickLabels(minor=False))
        target.set_minor_locator(LabelledMinorTicks())
        target.set_minor_formatter(LogTickLabels(minor=True))


def auto_log_scale(ax: Axes, axis: str, values: Iterable[float], min_ratio: float = 4.0) -> bool:
    """Log scale on ``axis`` when the positive ``values`` span at least ``min_ratio`` (max / min); True if set.

    Below that a log axis shows too few labels to read and a linear one is clearer.
    """
    positive = [v for v in values if v is not None and v > 0]
    if positive and max(positive) / min(positive) >= min_ratio:
        log_scale(ax, axis)
        return True
    return False


def plain_number(x: float) -> str:
    """``x`` as a short plain number (0.04, 20, 30000), or ``10^k`` in mathtext outside [1e-3, 1e5)."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.6g}"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10**exponent
    return f"$10^{{{exponent}}}$" if math.isclose(mantissa, 1.0) else f"${mantissa:.3g}\\times10^{{{exponent}}}$"


def power_of_ten(x: float) -> str:
    """``x`` (a positive power of ten) as mathtext ``10^k``."""
    return f"$10^{{{round(math.log10(x))}}}$"


#: Widest span (decades) of a log axis on which ``LogTickLabels`` labels minor ticks.
MINOR_LABEL_DECADES = 2.0


class LabelledMinorTicks(mpl.ticker.LogLocator):
    """The minor ticks of a base-10 log axis (matplotlib's default ones) where ``LogTickLabels`` may label some, none on
    an axis spanning more than ``MINOR_LABEL_DECADES``.

    In this theme a tick draws nothing but its label (no tick marks, no minor grid), and an unlabelled minor tick
    still costs the layout and the draw its artists (a figure of 24 log axes built about 2,900 ticks): without them
    the figure is the same, faster.
    """

    def __init__(self) -> None:
        super().__init__(base=10.0, subs=None)

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        lo, hi = sorted((vmin, vmax))
        if lo > 0 and math.log10(hi / lo) > MINOR_LABEL_DECADES:
            return []
        return super().tick_values(vmin, vmax)


class LogTickLabels(mpl.ticker.Formatter):
    """Tick labels of a base-10 log axis: ``plain_number`` on the ticks worth labelling (see ``log_scale``)."""

    def __init__(self, minor: bool) -> None:
        self.minor = minor

    def __call__(self, x: float, pos: int | None = None) -> str:
        if x <= 0:
            return ""
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (x, x)
        decades = math.log10(hi / lo) if lo > 0 else math.inf
        if not self.minor:
            # a long axis, or one reaching past plain_number's range: every decade as 10^k, so labels read alike
            return power_of_ten(x) if decades > 3.0 or hi >= 1e5 or lo < 1e-3 else plain_number(x)
        mantissa = x / 10 ** math.floor(math.log10(x) + 1e-9)
        whole = round(mantissa)
        if not math.isclose(mantissa, whole, rel_tol=1e-6) or decades > MINOR_LABEL_DECADES:
            return ""
        return plain_number(x) if decades <= 0.5 or whole in (2, 5) else ""


def ordered(values: Iterable[str], order: Sequence[str]) -> list[str]:
    """``values`` (deduplicated) in ``order`` first, then the rest alphabetically."""
    present = set(values)
    return [v for v in order if v in present] + sorted(present - set(order))


def colorbar(fig: Figure, mappable: mpl.cm.ScalarMappable, axes: Axes | np.ndarray, label: str, **kw: Any) -> None:
    """A slim colourbar beside ``axes`` with a print-size label."""
    cbar = fig.colorbar(mappable, ax=axes, shrink=kw.pop("shrink", 0.9), aspect=kw.pop("aspect", 30), pad=0.01, **kw)
    cbar.set_label(label)
    cbar.ax.tick_params(labelsize=SMALL_FONT_SIZE)
    if "ticks" in kw:
        cbar.ax.minorticks_off()


@dataclass(frozen=True)
class FigureFiles:
    """The three files of one saved figure."""

    png: Path
    pdf: Path
    data: Path

    def as_dict(self) -> dict[str, str]:
        return {"png": str(self.png), "pdf": str(self.pdf), "data": str(self.data)}


def save_figure(fig: Figure, data: pl.DataFrame, name: str, folder: Path) -> FigureFiles:
    """Write ``<folder>/<name>.png`` (PNG_DPI), ``.pdf`` and ``.parquet`` (``data``), each atomically.

    The layout solved for the PNG is frozen for the PDF (the figure's layout engine is set to
    none), so both files show the same layout and the PDF is not laid out twice.
    ``name`` is a file stem (letters, digits, ``_`` and ``-``); an existing figure of that name is
    replaced only once its new file is complete.
    """
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ValueError(f"figure name {name!r}: use letters, digits, '_' and '-' only")
    files = FigureFiles(folder / f"{name}.png", folder / f"{name}.pdf", folder / f"{name}.parquet")
    with atomic_path(files.png) as tmp:
        fig.savefig(tmp, format="png", dpi=PNG_DPI)
    # The layout is in inches and already solved by the PNG draw: keep it for the PDF. No engine at all (None), not
    # "none": matplotlib draws a figure that has any engine, its "none" placeholder included, once more before saving.
    fig.set_layout_engine(None)
    with atomic_path(files.pdf) as tmp:
        fig.savefig(tmp, format="pdf")
    write_parquet_atomic(data, files.data)
    return files
