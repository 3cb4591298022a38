"""A self-contained HTML page: headings, paragraphs, tables and embedded PNG figures.

The report must open anywhere, offline and as one file, so figures are embedded
as base64 ``data:`` URIs and the style sheet is inline.  Text is escaped; numbers
are formatted by the table's caller-supplied precision.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

__all__ = ["Page", "format_cell"]

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #aaa}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
.wide{overflow-x:auto}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td.text{text-align:left}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}
figure{margin:1em 0}figcaption{font-size:90%;color:#555}
img{max-width:100%;height:auto}
nav li{margin:2px 0}code{background:#f4f4f4;padding:0 3px}
"""


def format_cell(value, digits: int = 4) -> str:
    """Format one table cell: floats to ``digits`` significant decimals, the rest as text.

    >>> format_cell(0.123456), format_cell(3), format_cell(float("nan")), format_cell(True)
    ('0.1235', '3', '', 'yes')
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value != 0 and (abs(value) < 10 ** -(digits - 1) or abs(value) >= 1e7):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}f}"
    return str(value)


class Page:
    """Accumulates HTML blocks; :meth:`write` produces the single file.

    >>> page = Page("Demo")
    >>> page.section("Numbers", "s1")
    >>> page.table([{"n": 1, "alpha": 0.5}], ["n", "alpha"])
    >>> "<td>0.5000</td>" in page.html()
    True
    """

    def __init__(self, title: str):
        self.title = title
        self._blocks: list[str] = []
        self._toc: list[tuple[str, str]] = []

    def section(self, title: str, anchor: str) -> None:
        """Start a section (listed in the table of contents)."""
        self._toc.append((anchor, title))
        self._blocks.append(f'<h2 id="{html.escape(anchor)}">{html.escape(title)}</h2>')

    def subheading(self, title: str) -> None:
        self._blocks.append(f"<h3>{html.escape(title)}</h3>")

    def paragraph(self, text: str) -> None:
        """A paragraph of plain text (escaped); backquoted spans become code."""
        parts = html.escape(text).split("`")
        out = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
        self._blocks.append(f"<p>{out}</p>")

    def preformatted(self, text: str) -> None:
        self._blocks.append(f"<pre>{html.escape(text)}</pre>")

    def table(self, rows, columns, *, digits: int = 4, status_column: str | None = None):
        """A table of ``rows`` (dicts) with ``columns`` in order.

        ``status_column`` names a boolean column rendered as a green PASS or a red FAIL.
        """
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = []
        for row in rows:
            cells = []
            for c in columns:
                v = row.get(c, "")
                if c == status_column:
                    cls, word = ("pass", "PASS") if v else ("fail", "FAIL")
                    cells.append(f'<td class="{cls}">{word}</td>')
                else:
                    cls = "" if isinstance(v, (int, float)) else ' class="text"'
                    cells.append(f"<td{cls}>{html.escape(format_cell(v, digits))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        # in a scrolling box: a wide table (many columns) scrolls instead of being cut off
        self._blocks.append(
            f'<div class="wide"><table><tr>{head}</tr>{"".join(body)}</table></div>'
        )

    def figure(self, fig_or_png, caption: str = "") -> None:
        """Embed a matplotlib figure (closed afterwards) or a PNG file as base64."""
        if isinstance(fig_or_png, (str, Path)):
            data = Path(fig_or_png).read_bytes()
        else:
            buf = io.BytesIO()
            fig_or_png.savefig(buf, format="png", dpi=110, bbox_inches="tight")
            import matplotlib.pyplot as plt

            plt.close(fig_or_png)
            data = buf.getvalue()
        b64 = base64.b64encode(data).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self._blocks.append(f'<figure><img src="data:image/png;base64,{b64}" alt="">{cap}</figure>')

    def extend(self, other: Page) -> None:
        """Append ``other``'s blocks and table-of-contents entries (a section built elsewhere)."""
        self._toc.extend(other._toc)
        self._blocks.extend(other._blocks)

    def html(self) -> str:
        toc = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t in self._toc)
        return (
            "<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(self.title)}</h1><nav><ul>{toc}</ul></nav>"
            + "\n".join(self._blocks)
            + "</body></html>"
        )

    def write(self, path) -> Path:
        """Write the page atomically."""
        from .._files import atomic_path

        with atomic_path(path) as tmp:
            Path(tmp).write_text(self.html(), encoding="utf-8")
        return Path(path)
