"""Houlsby adapters (Houlsby et al. 2019, Sec. 2.1): two bottlenecks x + U·GELU(W·x) per adapted layer,
W: d→d_s, U: d_s→d (with biases), and — as the authors train them — each task's own copy of the layer's two
LayerNorms (LN1 after the attention, LN2 after the FFN: ``attention_norm`` / ``output_norm``), initialised from
the trunk's and trained with the adapters while the trunk (its own LayerNorms included) stays frozen.

    params K·2·(2·d·S + S + d) + Σ_{l∈K} norms_l   (paper: 4·K·d·S — the convention drops LayerNorm parameters)
    norms_l: the family's two norms at layer l (``Family.hook_norms``): 4d for BERT's LayerNorm(d) with bias,
             2d for ModernBERT's bias-free ones (d in its layer 0, whose attention norm is the identity)
    FLOPs per adapted layer 2·(2n·d·S + 2n·S·d): a task's norm replaces the trunk's, so no FLOPs added

With the trunk trained (``--train-trunk``) the trunk's own norms train and the tasks share them: per-task copies
would leave them no gradient (``task_norms``).
"""

from __future__ import annotations

from ...families.registry import get_family
from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, linear, mm
from ...pricing.poly import Poly, S
from ...pricing.recipe import Recipe


def task_norms(cfg) -> bool:
    """Whether each task holds its own copy of the adapted layers' LayerNorms: when the trunk is frozen (None:
    Houlsby's default, frozen) — the one place both the calculator and ``module.py`` read it."""
    return cfg.freeze_trunk is not False


def norms(m, i):
    """The norms (``pricing.family.Norm``, None where the layer has none) a task copies at adapted layer i."""
    return tuple(n for n in get_family(m.family).hook_norms(m, i) if n is not None)


def _params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, paper=paper) + linear(S, d, paper=paper)
    parts = []
    for l in layers:
        parts += [Part("adapter after attention", l, one), Part("adapter after FFN", l, one)]
        if task_norms(cfg):
            parts.append(Part("LayerNorms (per task)", l, Poly.of(sum(n.params(paper) for n in norms(m, l)))))
    return parts


def _flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("adapters", l, 2 * (mm(n, d, S) + mm(n, S, d))) for l in layers]


def _tensors(m, layers, cfg):
    """W, b and U, b of each bottleneck (8 per layer), and the gain (+ bias) of each copied norm."""
    copied = sum(n.tensors for l in layers for n in norms(m, l)) if task_norms(cfg) else 0
    return 8 * len(layers) + copied, 0


class HoulsbyActivations(ActivationHooks):
    """x + U·GELU(W·x) on the attention output and on the FFN output: W keeps x, GELU W·x, U its output; the
    task's own norms train, so they keep their input and row statistics even where it needs no gradient (a pre-norm
    layer's input under a frozen trunk)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def _bottleneck(self, x):
        tr = self.trace
        return tr.add(x, tr.linear(tr.gelu(tr.linear(x, self.size, True)), self.model.hidden, True))

    def adapt_attention_output(self, i, y):
        return self._bottleneck(y)

    def adapt_ffn_output(self, i, y):
        return self._bottleneck(y)

    def attention_norm(self, i, x, trains):
        return self.trace.layer_norm(x, trains or task_norms(self.cfg))

    def output_norm(self, i, x, trains):
        return self.trace.layer_norm(x, trains or task_norms(self.cfg))


# Houlsby et al. 2019 tune the rate per GLUE task (Sec. 3.1, on BERT-large); the authors' released BERT-base example
# (google-research/adapter-bert, README: run_classifier.py on MRPC) trains adapters at 3e-4, batch 32, with BERT's
# optimiser (10 % linear warm-up, weight decay 0.01). Of the rates the authors used, 3e-4 is the one they give for
# an encoder of this size (BERT-base, as the embedded MiniLM and the calculator's default): what a user who runs
# their example gets.
RECIPE = Recipe(
    lr=3e-4,
    warmup=0.1,
    weight_decay=0.01,
    source="Houlsby et al. 2019; the authors' BERT-base example, google-research/adapter-bert README: "
    "--learning_rate=3e-4, BERT's 10 % warm-up and weight decay 0.01",
)

METHODS = (
    Method(
        "houlsby",
        "Houlsby adapters",
        "Serial bottleneck x + U·GELU(W·x) after the attention and FFN outputs, and each task's own LayerNorms "
        "(Houlsby et al. 2019).",
        "4·K·d·d_s",
        _params,
        _flops,
        activations=HoulsbyActivations,
        tensors=_tensors,
        trunk="frozen",  # as its authors train it: the pretrained weights stay as they are, the LayerNorms per task
        recipe=RECIPE,
    ),
)
