"""MPNet (``model_type`` mpnet: microsoft/mpnet-base, sentence-transformers/all-mpnet-base-v2; Song et al. 2020):
BERT's post-norm layers whose attention scores get a relative position bias, RoBERTa's position numbering, no token
types (transformers 5.24, ``modeling_mpnet.py``).

R = ``relative_attention_num_buckets`` (32), P = ``max_position_embeddings``.
    embeddings (V + P)·d + 2d + R·h   word and position tables (padding row 1), LayerNorm, and the encoder's
                                      ``relative_attention_bias`` (an R × h table held once beside the layers, read
                                      by every layer): counted with the embeddings, frozen with them (CA-MTL), and
                                      kept by the paper convention (a lookup table, not a bias vector)
    layer   4d² + 2·d·d_ff + 9d + d_ff   BERT's (q, k, v, o, attention LayerNorm, intermediate, output, LayerNorm)
    pooler  d² + d                    ``MPNetPooler`` (dense + tanh on the first token), in ``AutoModel``
    layer FLOPs BERT's 2n·(4d² + 2·d·d_ff) + 4n²·d. The bias is a lookup: n² bucket ids → (n, n, h) → a contiguous
    (B, h, n, n) copy, made once per forward and added to every layer's scores (0 FLOPs: no matmul).
Task head: ``MPNetClassificationHead`` is RoBERTa's (dropout, dense d×d, tanh, dropout, out_proj on the first token):
the same maps as the pooler followed by Linear(d, C), so, as for RoBERTa, the dense is the base model's pooler,
shared by the tasks by default; ``per_task_pooler`` gives each task its own, which is exactly MPNet's head.
Attention: eager only (transformers has no sdpa path for MPNet; ``attn_implementation`` sdpa is refused, as
transformers refuses it). Positions are numbered from the hard-coded padding index 1 + 1 (``padding_idx`` is 1
whatever ``pad_token_id`` says): the longest sequence is P − 2.
Refused (one line): ``relative_attention_num_buckets`` < 32 (``compute_position_bias`` always buckets into 32,
hard-coded, so a smaller table is indexed past its end), an activation the memory replay does not model
(``hidden_act``), ``attn_implementation`` other than eager, ``vocab_size`` 1 (the fixed padding row 1 lies outside
the table; ``pad_token_id`` itself is never read, so any value is priced).
"""

from __future__ import annotations

from ...pricing.activations import INT64
from ...pricing.family import Family, Replay, activation_option, bert_inference_layer, embedding_tables, probability
from ...pricing.limits import MAX_WIDTH
from ...pricing.method import bert_layer_flops, bert_layer_params
from ...pricing.shape import BaseModel
from ..bert.description import LAYER_TENSORS, trace_hidden_rate_choice, trace_pooler_head
from ..bert.description import trace_embeddings as bert_embeddings
from ..bert.description import trace_layer as bert_layer

BUCKETS = 32  # MPNetEncoder.compute_position_bias(num_buckets=32): the buckets every forward uses
PADDING_IDX = 1  # MPNetEmbeddings.padding_idx, hard-coded


def read(config: dict, name: str) -> BaseModel:
    """The shape, R and ``hidden_act``. ``is_decoder`` / ``add_cross_attention`` are not refused: MPNet's modules never
    read them (no causal mask, no cross-attention layers), so they change nothing that is built or computed."""
    buckets = config.get("relative_attention_num_buckets", BUCKETS)
    if not isinstance(buckets, int) or isinstance(buckets, bool) or not BUCKETS <= buckets <= MAX_WIDTH:
        raise ValueError(
            f"config {name!r}: relative_attention_num_buckets {buckets!r} is not an integer from {BUCKETS} "
            f"to {MAX_WIDTH:,} "
            f"(MPNet's compute_position_bias always uses {BUCKETS} buckets: a smaller table is indexed "
            "past its end)"
        )
    options = dict(relative_attention_num_buckets=buckets, **activation_option(config, name, "hidden_act"))
    return BaseModel(
        name=name,
        hidden=config["hidden_size"],
        layers=config["num_hidden_layers"],
        heads=config["num_attention_heads"],
        intermediate=config["intermediate_size"],
        vocab=config["vocab_size"],
        positions=config.get("max_position_embeddings", 512),
        token_types=0,
        family="mpnet",
        options=tuple(sorted(options.items())),
    )


def buckets(m: BaseModel) -> int:
    """R: the rows of the relative attention bias table."""
    return m.option("relative_attention_num_buckets", BUCKETS)


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P)·d + 2d + R·h."""
    return embedding_tables(m, m.vocab + m.positions, paper) + buckets(m) * m.heads


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    return bert_layer_params(m, paper)


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    return bert_layer_flops(m, n)


# --- the forward on symbolic tensors (memory and step time, docs/design.md "Memory (bytes)", "Time") ------------------
# As ``MPNetEmbeddings``, ``MPNetEncoder.compute_position_bias`` and ``MPNetSelfAttention`` run (checked against
# saved_tensors_hooks by tests/test_memory.py): the word lookup keeps the caller's ids, the position lookup the (B, n)
# int64 positions it computes from them, the relative-bias lookup the (n, n) int64 bucket ids (each only when the
# embeddings train); the bias becomes a contiguous (B, h, n, n) copy (kept by nothing: additions keep nothing); each
# layer is BERT's with eager attention, QKᵀ/√d_h + bias (+ the mask when there is padding).


def conditions(config: dict) -> dict:
    """BERT's rate fields; the attention is MPNet's own eager one (the adapters' too: transformers sets eager)."""
    name = config.get("_name_or_path")
    return dict(
        hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.1),
        attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.1),
        classifier_dropout=probability(config, name, "classifier_dropout", None),
        attention="eager",
    )


def trace_embeddings(tr, m: BaseModel, trains: bool):
    """Word + position (numbered from the ids) lookups, LayerNorm, dropout; then the relative position bias, whose table
    trains with the embeddings (CA-MTL freezes them together), kept in ``tr.shared`` for the layers."""
    h = bert_embeddings(tr, m, trains, token_types=False, positions_from_ids=True)
    n, heads = tr.seq_len, m.heads
    ids = tr.new(n * n, False, item_bytes=INT64)  # relative_position_bucket(...): (n, n)
    tr.elementwise(tr.new(n * n * heads, False).nbytes, 2, 3 if trains else 0, trains)  # the (n, n, h) lookup
    if trains:
        tr.save(ids)
    tr.shared["position_bias"] = tr.copy(tr.new(n * n * heads, trains), times=tr.batch)  # expand(B, …).contiguous()
    return h


def trace_layer(tr, m: BaseModel, i, h, trains: bool, hooks):
    return bert_layer(tr, m, i, h, trains, hooks, score_bias=tr.shared["position_bias"])


def embedding_tensors(m: BaseModel) -> int:
    """Word and position tables, LayerNorm γ, β, the relative attention bias table."""
    return 5


def inference_layer(m: BaseModel, batch: int, n: int, eager: bool, adapted: bool) -> tuple[int, int]:
    """BERT's eager working set plus the (B, h, n, n) position bias, alive through every layer (an estimate)."""
    attention, ffn = bert_inference_layer(m, batch, n, True, adapted)
    bias = batch * m.heads * n * n
    return attention + bias, ffn + bias


REPLAY = Replay(
    embeddings=trace_embeddings,
    layer=trace_layer,
    classify=trace_pooler_head,
    choose=trace_hidden_rate_choice,
    embedding_tensors=embedding_tensors,
    layer_tensors=lambda m, i: LAYER_TENSORS,
    head_tensors=lambda m: 2,
    conditions=conditions,
    inference_layer=inference_layer,
)

FAMILY = Family(
    "mpnet",
    "MPNet",
    ("mpnet",),
    read,
    embeddings,
    layer_params,
    layer_flops,
    token_types=False,
    attention=("eager",),
    pad_token_id=PADDING_IDX,
    padding_idx=PADDING_IDX,
    replay=REPLAY,
    reserved_positions=lambda m: PADDING_IDX + 1,
    notes="BERT's layers + a relative position bias (R·h, counted with the embeddings, 0 FLOPs); "
    "pooler shared like RoBERTa's; eager attention only; longest sequence P − 2",
)
