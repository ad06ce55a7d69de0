"""``style.apply_light_theme`` (``whatif --html``'s figures) sets what seaborn's ``apply_theme`` sets, without importing seaborn:
every rcParam but ``image.cmap`` (seaborn's own colormap), the colour cycle and the colour codes; each checked in a fresh
interpreter against seaborn itself."""

from __future__ import annotations

import json
import subprocess
import sys

from pipelines.home.paths import REPO_ROOT

DUMP = """
import json, sys
import matplotlib as mpl
from matplotlib import colors
from pipelines.figures import style
getattr(style, sys.argv[1])()
rc = {k: repr(v) for k, v in mpl.rcParams.items() if k != "image.cmap"}
codes = {c: list(colors.to_rgb(c)) for c in "bgrmyck"}
print(json.dumps({"rc": rc, "codes": codes, "palette": [list(c) for c in style.palette(12)], "seaborn": "seaborn" in sys.modules}))
"""


def dump(theme: str) -> dict:
    done = subprocess.run([sys.executable, "-c", DUMP, theme], capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    return json.loads(done.stdout)


def test_the_light_theme_is_seaborns_theme_without_seaborn() -> None:
    light, seaborn = dump("apply_light_theme"), dump("apply_theme")
    assert light["seaborn"] is False and seaborn["seaborn"] is True
    differ = {k: (light["rc"][k], seaborn["rc"].get(k)) for k in light["rc"] if light["rc"][k] != seaborn["rc"].get(k)}
    assert differ == {} and set(light["rc"]) == set(seaborn["rc"])
    assert light["codes"] == seaborn["codes"]
    assert light["palette"] == seaborn["palette"]


def test_the_palette_is_seaborns_colorblind() -> None:
    import seaborn as sns

    from pipelines.figures import style

    assert [tuple(c) for c in style.palette(10)] == [tuple(c) for c in sns.color_palette("colorblind")]
