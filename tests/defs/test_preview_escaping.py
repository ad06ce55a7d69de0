"""The Markdown preview of a table shows its data as text (issue 39, item 15): no Markdown, HTML or ANSI from a cell."""

from __future__ import annotations

import polars as pl
from markdown_it import MarkdownIt  # CommonMark, as the Dagster UI renders metadata Markdown (markdown-it-py comes with rich)

from pipelines.defs.shared.metadata import markdown_preview

HOSTILE = "**bold** [x](javascript:alert(1)) \x1b[31mred <b>h</b> a|b _u_ # h"


def test_a_hostile_job_name_renders_as_the_text_it_is() -> None:
    preview = markdown_preview(pl.DataFrame({"job_name": [HOSTILE], "num_gpus": [4], "energy_j": [1.5e6]}))
    html = MarkdownIt("commonmark").enable("table").render(preview)
    cell = html.split("<td>")[1].split("</td>")[0]
    assert cell == "**bold** [x](javascript:alert(1)) \\x1b[31mred &lt;b&gt;h&lt;/b&gt; a|b _u_ # h"
    assert "<strong>" not in html and "<a " not in html and "<em>" not in html and "\x1b" not in html
    assert html.count("<td>") == 3  # the | in the name split no cell
    assert "<td>1.5e+06</td>" in html and "<td>4</td>" in html
