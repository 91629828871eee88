"""The paper check: does the calculator reproduce the paper's sizes (disagreements filled red)?"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from pals_core.budget.paper import PaperRow
from pals_core.pricing.units import human

OK_FILL, BAD_FILL = "#e6f4ea", "#fde0dc"


def paper_frame(rows: Sequence[PaperRow]) -> pd.DataFrame:
    out = []
    for r in rows:
        fmt = (lambda v: f"{v:.2f}×") if r.quantity == "ratio" else (lambda v: f"{v:.0f}")
        out.append(
            {
                "configuration": r.label,
                "budget": r.budget,
                "compares": r.quantity,
                "paper": fmt(r.paper),
                "calculator": fmt(r.ours),
                "task-specific params": human(r.params_task_specific),
                "× BERT": f"{r.ratio:.3f}",
                "reproduces": "yes" if r.reproduces else f"NO: {r.difference}",
            }
        )
    return pd.DataFrame(out)


def paper_figure(rows: Sequence[PaperRow]) -> go.Figure:
    """The paper-reproduction table; rows that disagree with the paper are filled red."""
    frame = paper_frame(rows)
    fills = [OK_FILL if r.reproduces else BAD_FILL for r in rows]
    fig = go.Figure(
        go.Table(
            columnwidth=[3, 1.2, 1, 1, 1.2, 1.4, 1, 2.6],
            header=dict(values=[f"<b>{c}</b>" for c in frame.columns], fill_color="#eeeeee", align="left"),
            cells=dict(
                values=[frame[c].tolist() for c in frame.columns],
                fill_color=[fills] * len(frame.columns),
                align="left",
                height=28,
                font=dict(size=13),
            ),
        )
    )
    fig.update_layout(
        margin=dict(l=0, r=0, t=40, b=0),
        height=90 + 30 * len(rows),
        title=dict(
            text="Stickland & Murray (2019), BERT-base, 8 GLUE tasks, paper convention, h_s = 12", x=0, xanchor="left"
        ),
    )
    return fig
