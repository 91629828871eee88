"""MT-Uncertainty sampling (Pilault, Elhattami & Pal, ICLR 2021, Sec. 3 and Algorithm 1), as released.

At every step one candidate batch of b examples is drawn from every task (T·b candidates) and run
through the model (eval mode, no gradient). Each candidate x of task t is scored by its normalised
predictive entropy

    H'(x) = H(p(x)) / log C_t ∈ [0, 1],      H(p) = −Σ_c p_c log p_c,
    U(x)  = (Ĥ_t / Ĥ_max) · H'(x),           Ĥ_t = mean of H' over task t's candidates, Ĥ_max = max_t Ĥ_t,

and the b candidates with the largest U, whatever their task, form ONE mixed batch (``select``; the
released code, CAMTL/CA-MTL): the trainer runs each task's rows through that
task's head and takes one optimiser step on the mean of the per-task mean losses
(``pals_core.train.trainer``; docs/design.md "Multi-task training" allows this sampler mixed batches). Ties (e.g. all U
equal) go to the earlier candidate position, tasks interleaved (position j of every task before
position j + 1 of any).

A regression task (C_t = 1) has no predictive distribution. The project's earlier choice gave its b
candidates one common value (the mean H' of the classification candidates); that starves it: top-b
selection takes a block of equal scores all or nothing, and a value at the mean loses to the upper half
of the classification candidates, so ``--tasks rte,stsb,mrpc`` never trained STS-B. The released code
copies another task's entropies for STS-B; here (``fill_regression``) a regression task copies, row by
row, the H' of one classification task of the same step, taken in turn: at step s the k-th regression
task copies classification task (s + k) mod C. It then ties with that task row for row (Ĥ_t equal,
ties interleave), so it trains whenever the copied task does, and over the steps its share is that
of an average classification task: neither preferred nor starved. With regression tasks only, every
H' is 1 (the first b candidates, tasks interleaved).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .task_sampler import DEFAULT_EPOCH_STEPS, TaskSampler

Batch = dict  # input_ids, attention_mask, token_type_ids, labels (``Encoded.batch``)


def _num_labels(model: Any, task: str, logits) -> int:
    tasks = getattr(model, "tasks", None)
    return int(tasks[task]) if isinstance(tasks, dict) and task in tasks else int(logits.shape[-1])


def normalised_entropies(model: Any, batches: Sequence[tuple[str, Batch]]) -> list[np.ndarray]:
    """H'(x) for every candidate of every ``(task, batch)``; NaN for regression tasks (C_t = 1); a per-word task's
    row: the mean of its words' H' (each word's first sub-token); a multiple-choice row: the entropy of the softmax
    over its k candidates (its logits are their scores); a span task's window (``model.spans``): the mean of its start
    and its end distribution's entropy over the window's n tokens, each over log n (``span_entropies``)."""
    import torch

    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    out = []
    try:
        with torch.no_grad():
            for task, batch in batches:
                logits = model(
                    task=task,
                    input_ids=batch["input_ids"].to(device),
                    attention_mask=batch["attention_mask"].to(device),
                    token_type_ids=batch["token_type_ids"].to(device),
                ).float()
                if task in getattr(model, "spans", ()):
                    h = span_entropies(logits, batch["attention_mask"].to(logits.device))
                    out.append(h.clamp(0.0, 1.0).cpu().numpy().astype(np.float64))
                    continue
                c = _num_labels(model, task, logits)
                if c == 1:
                    out.append(np.full(logits.shape[0], np.nan))
                    continue
                logp = torch.log_softmax(logits, dim=-1)
                h = -(logp.exp() * logp).sum(-1) / math.log(c)
                if h.ndim == 2:  # one distribution per token (a per-word task): the mean over the words' first tokens
                    words = (batch["labels"] != -100).to(h.device)
                    h = (h * words).sum(-1) / words.sum(-1).clamp(min=1)
                out.append(h.clamp(0.0, 1.0).cpu().numpy().astype(np.float64))
    finally:
        model.train(was_training)
    return out


def span_entropies(logits, attention_mask):
    """(B,) H' of span windows: logits (B, n, 2) — each token's start and end logit — over the real tokens of each
    window (``attention_mask``): H(softmax of the start logits) / log n and the same of the end's, averaged (a
    window of one token: 0)."""
    import torch

    mask = attention_mask.bool().unsqueeze(-1)  # (B, n, 1)
    logp = torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=1)
    plogp = torch.where(mask, logp.exp() * logp, torch.zeros_like(logp))
    n = attention_mask.sum(-1).to(logits.dtype)
    return (-plogp.sum(dim=1) / torch.log(n.clamp(min=2)).unsqueeze(-1)).mean(-1)


def fill_regression(entropies: Sequence[np.ndarray], step: int = 0) -> list[np.ndarray]:
    """Regression candidates (all NaN) copy the H' of classification task (step + k) mod C, the k-th regression
    task of the step (rows beyond the copied batch's length repeat it cyclically); all 1 with no
    classification task. Classification entropies are returned as they are."""
    known = [i for i, h in enumerate(entropies) if len(h) and not np.isnan(h).all()]
    out, k = [], 0
    for h in entropies:
        h = np.asarray(h, dtype=np.float64)
        if len(h) and np.isnan(h).all():
            if known:
                source = entropies[known[(step + k) % len(known)]]
                h = np.resize(np.asarray(source, dtype=np.float64), len(h))
            else:
                h = np.ones(len(h))
            k += 1
        out.append(h)
    return out


def uncertainty_scores(entropies: Sequence[np.ndarray], step: int = 0) -> list[np.ndarray]:
    """U(x) = (Ĥ_t / Ĥ_max) · H'(x), regression candidates filled first (``fill_regression``)."""
    filled = fill_regression(entropies, step)
    means = np.array([h.mean() if len(h) else 0.0 for h in filled])
    top = means.max() if len(means) else 0.0
    weights = means / top if top > 0 else np.ones_like(means)
    return [w * h for w, h in zip(weights, filled)]


def most_uncertain(scores: Sequence[np.ndarray], b: int) -> list[tuple[int, int]]:
    """The b (candidate, row) pairs with the largest scores; ties by row position, then candidate."""
    flat = [(-float(s), row, c) for c, sc in enumerate(scores) for row, s in enumerate(sc)]
    flat.sort()
    return [(c, row) for _, row, c in flat[:b]]


def shares(scores: Sequence[np.ndarray], b: int) -> np.ndarray:
    """How many of the b selected rows each candidate batch holds."""
    counts = np.zeros(len(scores), dtype=np.int64)
    for c, _ in most_uncertain(scores, b):
        counts[c] += 1
    return counts


class MTUncertaintySampler(TaskSampler):
    """CA-MTL's MT-Uncertainty sampling: one mixed batch of the most uncertain b of T·b candidates."""

    name = "mt_uncertainty"
    needs_model = True

    def __init__(self, task_sizes, total_steps, epoch_steps=DEFAULT_EPOCH_STEPS, **_: Any) -> None:
        super().__init__(task_sizes, total_steps, epoch_steps)

    def probabilities(self, step: int) -> np.ndarray:
        """Every task offers one candidate batch per step (the choice depends on the model)."""
        return np.full(len(self.tasks), 1.0 / len(self.tasks))

    def candidates(self, step: int, rng: np.random.Generator) -> list[str]:
        return list(self.tasks)

    def scores(self, model: Any, batches: Sequence[tuple[str, Batch]], step: int = 0) -> list[np.ndarray]:
        """U(x) of every candidate, per candidate batch."""
        return uncertainty_scores(normalised_entropies(model, batches), step)

    def select(self, model: Any, batches: Sequence[tuple[str, Batch]], step: int = 0) -> list[tuple[str, Batch]]:
        """The step's mixed batch: the b most uncertain candidates (b = the candidate batch size), as one
        sub-batch per task in candidate order (rows of each in their candidate order)."""
        b = max(len(batch["labels"]) for _, batch in batches)
        chosen = most_uncertain(self.scores(model, batches, step), b)
        out = []
        for c, (task, batch) in enumerate(batches):
            rows = sorted(row for cc, row in chosen if cc == c)
            if rows:
                out.append((task, _rows(batch, rows)))
        return out


def _rows(batch: Batch, rows: list[int]) -> Batch:
    """The given rows of a padded batch, trimmed to their own longest sequence."""
    import torch

    index = torch.as_tensor(rows, dtype=torch.long)
    groups = batch.get("groups")
    if groups is not None:  # rows of several sequences (a multiple-choice row's candidates): their sequences
        counts = groups[1:] - groups[:-1]
        seqs = torch.cat([torch.arange(int(groups[r]), int(groups[r + 1])) for r in rows])
        out = {k: v.index_select(0, seqs) for k, v in batch.items() if k not in ("labels", "groups")}
        out["labels"] = batch["labels"].index_select(0, index)
        out["groups"] = torch.cat([torch.zeros(1, dtype=groups.dtype), counts.index_select(0, index).cumsum(0)])
    else:
        out = {k: v.index_select(0, index) for k, v in batch.items()}
    if "attention_mask" in out and out["attention_mask"].numel():
        width = int(out["attention_mask"].sum(-1).max())
        per_token = ("labels", "starts") if "starts" in out else ()  # a per-word batch's labels are per token
        for k in ("input_ids", "attention_mask", "token_type_ids", *per_token):
            if k in out:
                out[k] = out[k][:, :width]
    return out
