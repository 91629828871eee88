"""Regression: one number per row (pure Python; the torch part is ``module.py``).

Label values: a finite number (a float, an integer, or text that is a decimal number in ASCII), inside the declared
``range`` when there is one. Head: C_t = 1 output; training on standardised targets: the head's output z is trained
towards (y − mean) / std, mean and std (population, ddof 0; 1 for targets all equal) of the train rows kept in the
run's config.json (``data.<task>.scale``), and every prediction is z·std + mean, in the user's units (the dev
metrics, ``pals-predict``, ``predict_texts``; the ONNX export's ``export.json`` names the scale, the peft / hf export
folds it into the head's last Linear). Loss: mean squared error of z. Metrics: ``pearson`` (main by default),
``spearman`` (0.0 for a constant prediction: undefined correlation), ``rmse`` and ``mae`` (in the user's units;
lower is better, so never a main metric). Baseline: the training mean on every dev row (whose correlations are 0). Its rows have no
distribution to rank by entropy: MT-Uncertainty copies another task's (``pals_core.data.mt_uncertainty``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels as L
from ..base import CORRELATION, ERROR, Kind, TaskOutputs, check_lengths, is_number
from ..errors import TaskDataError, TaskRecordError

NUMBER = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z|(?i:[+-]?(nan|inf|infinity))\Z"
"""A regression target written as text (spaces around it aside): a decimal number in ASCII, as written — float()
would also take '1_0' as 10 and Arabic-Indic digits as numbers."""


LOWER_BETTER = ("rmse", "mae")


class Regression(Kind):
    name = "regression"
    metrics = {"pearson": CORRELATION, "spearman": CORRELATION, "rmse": ERROR, "mae": ERROR}
    fields = ("range",)
    field_notes = {"range": "regression tasks"}
    has_labels = False
    problem_type = "regression"
    pipeline_scores = {"function_to_apply": "none"}
    pipeline_reading = "the head's raw output as its `score`: pals-predict's `{task}`, in the task's own units"
    entropy_sampling = "borrow"
    in_units = LOWER_BETTER

    def check(self, record: Any, where: str) -> None:
        if record.main_metric in LOWER_BETTER:
            raise TaskRecordError(
                f"{where}: {record.main_metric!r} is lower-better and cannot be the main metric (the dev average and "
                "the best checkpoint take the highest): report it in 'metrics', keep pearson or spearman as 'metric'"
            )
        r = record.range
        if r is not None and (len(r) != 2 or not all(is_number(v) and math.isfinite(v) for v in r) or r[0] >= r[1]):
            raise TaskRecordError(f"{where}: 'range' is [low, high] with low < high, got {list(r)!r}")

    def num_outputs(self, names: Sequence[str]) -> int:
        return 1

    def scale(self, train_labels: Any) -> dict | None:
        import numpy as np

        y = np.asarray(train_labels, dtype=np.float64)
        std = float(y.std()) if len(y) else 0.0
        return {"mean": float(y.mean()) if len(y) else 0.0, "std": std if std > 0 else 1.0}

    def unscale(self, preds: Any, scale: dict | None) -> Any:
        return to_units(preds, scale)

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        column = record.label
        out = []
        for i, v in enumerate(cols.values[column]):
            v = L.class_name(cols, column, i, v)
            try:
                if isinstance(v, str) and v.strip() and not re.match(NUMBER, v.strip()):
                    raise ValueError(v)
                x = float(v) if not isinstance(v, bool) and v is not None and str(v).strip() else None
            except (TypeError, ValueError):
                raise TaskDataError(f"{cols.where(i, column)}: target {L.short(v)} is not a number") from None
            if x is None:
                raise TaskDataError(f"{cols.where(i, column)}: missing label")
            if not math.isfinite(x):
                raise TaskDataError(f"{cols.where(i, column)}: target {v!r} is not finite")
            if record.range is not None and not record.range[0] <= x <= record.range[1]:
                raise TaskDataError(
                    f"{cols.where(i, column)}: target {x:g} is outside the declared range "
                    f"[{record.range[0]:g}, {record.range[1]:g}]"
                )
            out.append(x)
        return out

    def label_array(self, labels: Sequence[Any], num_labels: int):
        """float64 targets as read, so the dev metrics are those a person recomputes from the file (the loss casts
        them to the logits' float32)."""
        import numpy as np

        return np.asarray(labels, dtype=np.float64)

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        return regression_scores(preds, labels, metrics)

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        import numpy as np

        return {s: np.full(len(y), train_labels.mean()) for s, y in dev_labels.items()}, 1

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        """mean/std/min/max of the targets as written (float64: not the float32 the model trains on)."""
        import numpy as np

        def stats(y: Any) -> dict:
            return {"mean": float(y.mean()), "std": float(y.std()), "min": float(y.min()), "max": float(y.max())}

        return stats(train_y), stats(np.concatenate([np.asarray(y, np.float64) for y in dev_ys.values()]))

    def profile_lines(self, profile: dict, table) -> list[str]:
        keys = ("mean", "std", "min", "max")
        rows = [[split, *(f"{d[k]:.3g}" for k in keys)] for split, d in profile["distribution"].items()]
        return table(["target", *keys], rows)

    def baseline_text(self, profile: dict) -> str:
        return f"the train mean {profile['distribution']['train']['mean']:.3g} on every row"

    def distribution_text(self, profile: dict) -> str:
        parts = []
        for split in ("train", "dev"):
            d = profile["distribution"][split]
            parts.append(f"{split}: mean {d['mean']:.2f} ± {d['std']:.2f}, range {d['min']:g} … {d['max']:g}")
        return f"**{profile['name']}** (regression targets) — " + " · ".join(parts)

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        import numpy as np

        logits = np.asarray(logits, dtype=np.float32)
        return TaskOutputs(task, self.name, (), [float(v) for v in to_units(logits[:, 0], scale)], None, None, logits)

    def columns(self, probs: bool) -> list[str]:
        return ["label"]


def to_units(z: Any, scale: dict | None) -> Any:
    """The head's standardised outputs z as values in the user's units, z·std + mean in float64 (the same
    arithmetic for the dev metrics and for ``pals-predict``, so the two agree to the last bit); no scale: as given."""
    import numpy as np

    if not scale:
        return z
    return np.asarray(z, dtype=np.float64) * scale["std"] + scale["mean"]


def regression_scores(preds: Any, labels: Any, metrics: Sequence[str] = ("pearson", "spearman")) -> dict[str, float]:
    """Pearson and Spearman correlation (0.0 for a constant prediction: undefined correlation), RMSE and MAE."""
    import numpy as np
    from scipy.stats import pearsonr, spearmanr

    preds, labels = np.asarray(preds, dtype=np.float64).reshape(-1), np.asarray(labels, dtype=np.float64)
    check_lengths(preds, labels)
    constant = np.ptp(preds) == 0 or np.ptp(labels) == 0
    fn = {"pearson": pearsonr, "spearman": spearmanr}
    out = {}
    for m in metrics:
        if m == "rmse":
            out[m] = float(np.sqrt(np.mean((preds - labels) ** 2)))
        elif m == "mae":
            out[m] = float(np.mean(np.abs(preds - labels)))
        else:
            out[m] = 0.0 if constant else float(fn[m](preds, labels)[0])
    return out


KIND = Regression()
