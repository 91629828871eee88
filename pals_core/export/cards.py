"""The model card (``README.md``) of each task folder a merged (``--format hf``) or peft (``--format peft``) export
writes: what the folder holds, the base it loads on, and the one transformers ``pipeline(...)`` call that reproduces
``pals-predict``'s labels and probabilities (docs/design.md "Using a trained run").

The call is built here once (``pipeline_call``: the task's kind declares the pipeline, its settings and how its
output reads — ``Kind.pipeline_task``, ``pipeline_arguments``, ``pipeline_call_arguments``, ``pipeline_reading``) and
both rendered into the card and handed to whoever runs it (tests/test_export_cards.py runs the card's code as
written). A kind no transformers pipeline serves (``pipeline_task`` None: multiple choice) gets the
``AutoModelFor<hf_head>`` call itself instead (``candidates_code``: each row's k sequences in one forward, the
softmax over their k scores), and a kind peft has no task type for (``peft_task_type`` None) the plain
``PeftModel`` over that class. Every card's code starts from ``folder = "<this folder, absolute>"``: the one line to change when the
export moves.

Loading a peft adapter builds the head's modules from the base's config, and transformers reports them MISSING from
the base checkpoint (it holds no head) just before peft puts the trained head in (``modules_to_save``): a report
the user cannot act on, so the card's code hides transformers' load report (``QUIET_LOAD_REPORT``) and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..budget.methods import TRUNK_WORDS, trunk_frozen
from ..data.windows import pair_stride
from ..forward import words_of
from ..kinds import get_kind
from ..methods.registry import get_method
from .onnx import check_rows
from .origin import trunk_origin

LOAD_REPORT = "LOAD REPORT"  # what starts transformers' report of a checkpoint's missing / unexpected weights
QUIET_LOAD_REPORT = (
    f'logging.get_logger("transformers.modeling_utils").addFilter(lambda r: "{LOAD_REPORT}" not in r.getMessage())'
)
"""The card's line that hides transformers' load report (a peft base's head reported MISSING: see the module) and
nothing else. Not ``setLevel(ERROR)`` on that logger: transformers 5 then checks and logs a tensor-parallel plan."""


@dataclass(frozen=True)
class PipelineCall:
    """One task's ``pipeline(task, model=…, **arguments)``, called as ``predict(rows, **call_arguments)``."""

    task: str  # the pipeline's task: "text-classification", "token-classification"
    arguments: dict[str, Any]  # its settings (truncation, max_length, function_to_apply, top_k, aggregation_strategy)
    call_arguments: dict[str, Any]  # what every call takes besides the rows (is_split_into_words)
    example: list  # one of the task's rows, as the pipeline takes it (a text, {"text", "text_pair"}, a list of words)

    def line(self, model: str, tokenizer: str | None = None) -> str:
        """``predict = pipeline(…)``: ``model`` and ``tokenizer`` are Python expressions (a folder, a model)."""
        given = [repr(self.task), f"model={model}"] + ([f"tokenizer={tokenizer}"] if tokenizer else [])
        given += [f"{k}={v!r}" for k, v in self.arguments.items()]
        return f"predict = pipeline({', '.join(given)})"

    def example_line(self) -> str:
        return f"predict({', '.join([repr(self.example), *(f'{k}={v!r}' for k, v in self.call_arguments.items())])})"

    def __call__(self, predict, rows: list) -> list:
        """The pipeline ``predict`` (made by ``line``'s call) on ``rows``, as the card calls it."""
        return predict(rows, **self.call_arguments)


def pipeline_call(model, task: str) -> PipelineCall:
    """The pipeline call that reproduces ``pals-predict`` on ``task`` of ``model`` (a run's model), with one of the
    task's own rows as its example."""
    info = model.run
    record = info.records[task]
    kind = get_kind(record.kind)
    texts, pairs, _ = check_rows(record, info.max_len, n=1)
    if kind.pipeline_task is None:
        raise ValueError(f"task {task!r}: no transformers pipeline serves a {record.kind} task (candidates_code)")
    if kind.per_word:
        example: Any = words_of(texts[0])
    elif pairs is not None:
        example = {"text": texts[0], "text_pair": pairs[0]}
    else:
        example = texts[0]
    return PipelineCall(
        kind.pipeline_task, kind.pipeline_arguments(info.max_len, info.stride), kind.pipeline_call_arguments, [example]
    )


def candidates_code(model, task: str, model_line: str) -> list[str]:
    """The card's code for a task of k candidate sequences a row (``Kind.per_candidate``), which no transformers
    pipeline serves: ``model_line`` loads the ``AutoModelFor<hf_head>`` as ``model``; ``predict(rows)`` gives each
    row's k probabilities (the softmax over the k scores, as ``pals-predict``), a row being its k first segments and
    its k second segments (None: each candidate alone), each pair cut at the run's max length longest first."""
    info = model.run
    firsts, seconds, _ = check_rows(info.records[task], info.max_len, n=1)
    example = (firsts[0], None if seconds is None else seconds[0])
    return [
        model_line,
        "tokenizer = AutoTokenizer.from_pretrained(folder)",
        "",
        "",
        "def predict(rows):",
        '    """Each row (its k first segments, its k second segments or None): its k candidates\' probabilities."""',
        "    out = []",
        "    for firsts, seconds in rows:",
        f"        enc = tokenizer(firsts, seconds, truncation=True, max_length={info.max_len}, padding=True, "
        'return_tensors="pt")',
        '        if getattr(model.config, "type_vocab_size", 0) < 2:  # a model without segment embeddings reads none',
        '            enc.pop("token_type_ids", None)',
        "        with torch.no_grad():  # one row: its k sequences a batch of one row, (1, k, tokens)",
        "            logits = model(**{k: v[None] for k, v in enc.items()}).logits[0]",
        "        out.append(logits.softmax(-1).tolist())",
        "    return out",
        "",
        "",
        f"predict([{example!r}])",
    ]


def _code(*lines: str) -> str:
    return "```python\n" + "\n".join(lines) + "\n```\n"


def _front(lines: dict[str, Any]) -> str:
    out = ["---"]
    for key, value in lines.items():
        if isinstance(value, list):
            out += [f"{key}:"] + [f"- {v}" for v in value]
        elif value is not None:
            out.append(f"{key}: {value}")
    return "\n".join(out + ["---", ""])


def _about(model, task: str) -> str:
    """What the task is and how it was trained, in a sentence."""
    info = model.run
    record = info.records[task]
    names = info.labels[task]
    outputs = f"{len(names)} labels: {', '.join(f'`{n}`' for n in names)}" if names else "one value a row"
    trunk = TRUNK_WORDS[trunk_frozen(model.config)]
    return (
        f"Task `{task}` ({record.kind}, {outputs}) of the pals-train run `{info.path}`, step {info.step}: "
        f"{get_method(model.config.method).title} on {model.trunk.family} "
        f"(`{_pretrained(info)}`, trunk {trunk})."
    )


def _pretrained(info) -> str:
    origin = trunk_origin(info.config.get("model"))
    return origin.name or "random weights (pals-train --model tiny)"


def _reading(model, task: str) -> list[str]:
    """What the call's output is, in pals-predict's terms; a regression's units; the max length (paragraphs)."""
    info = model.run
    kind = get_kind(info.records[task].kind)
    lines = [f"Each row gives {kind.pipeline_reading.format(task=task)}."]
    scale = info.scales.get(task)
    if scale and "std" in scale:  # a regression's standardisation, folded into the head
        lines.append(
            f"The run trained on standardised targets z = (y − {scale['mean']:.6g}) / {scale['std']:.6g} (the training "
            "rows' mean and standard deviation); this head's last layer gives z·std + mean, folded in at export, so "
            'its raw output — the `score` of `function_to_apply="none"` — is in the task\'s own units.'
        )
    pairs = " (a pair longest first)" if info.records[task].pair else ""
    if kind.span_head:
        lines.append(
            f"A context longer than the run's max length {info.max_len} is read in overlapping windows sharing "
            f"{pair_stride(info.stride, info.max_len)} tokens (`stride`), the question repeated in each, as the run and "
            "pals-predict read it; the answer is decoded as transformers' question-answering example decodes it."
        )
    elif kind.per_word and info.stride is not None:
        lines.append(
            f"The tokenizer says `model_max_length` {info.max_len}, the run's max length: a longer sentence is read in "
            f"overlapping windows of it sharing {info.stride} tokens (`stride`), as the run and pals-predict read it."
        )
    else:
        lines.append(
            f"The tokenizer says `model_max_length` {info.max_len}, the run's max length: a longer row is cut "
            f"there{pairs}, as the run and pals-predict cut it."
        )
    return [p for line in lines for p in (line, "")]


def hf_card(model, task: str, folder: str) -> str:
    """``README.md`` of a merged export's task folder ``folder`` (absolute)."""
    kind = get_kind(model.run.records[task].kind)
    origin = trunk_origin(model.run.config.get("model"))
    start = f"folder = {folder!r}  # this folder: change it if you move it"
    info = model.run
    own = kind.card_code(folder, info.max_len, pair_stride(info.stride, info.max_len), info.scales.get(task))
    if own is not None:  # the kind's own code (a span task's decoding: no pipeline of transformers 5 serves it)
        use = own.rstrip("\n").splitlines()
    elif kind.pipeline_task is None:  # no pipeline serves the kind: the head's class itself
        head = f"AutoModelFor{kind.hf_head}"
        use = ["import torch", f"from transformers import {head}, AutoTokenizer", "", start]
        use += candidates_code(model, task, f"model = {head}.from_pretrained(folder).eval()")
    else:
        call = pipeline_call(model, task)
        use = ["from transformers import pipeline", "", start, call.line("folder"), call.example_line()]
    front = {
        "library_name": "transformers",
        "pipeline_tag": kind.pipeline_task,
        "base_model": origin.hub_id,
        "tags": ["pals-export", model.config.method],
    }
    method = get_method(model.config.method).title
    return "\n".join(
        [
            _front(front),
            f"# {task}",
            "",
            _about(model, task),
            f"The {method} update is merged into the weights: an `AutoModelFor{kind.hf_head}` folder, transformers "
            "alone loads it.",
            "",
            "## Use it as pals-predict does",
            "",
            _code(*use),
            *_reading(model, task),
        ]
    )


def peft_card(model, task: str, folder: str, base, settings: dict[str, Any]) -> str:
    """``README.md`` of a peft export's adapter folder ``folder`` (absolute); ``base``: the ``peft.PeftBase`` its
    adapter names; ``settings``: ``peft.load_settings`` of the task (what builds its head on the base)."""
    kind = get_kind(model.run.records[task].kind)
    auto, head = f"AutoPeftModelFor{kind.hf_head}", f"AutoModelFor{kind.hf_head}"
    front = {
        "base_model": base.hub_id,
        "library_name": "peft",
        "pipeline_tag": kind.pipeline_task,
        "tags": ["pals-export", model.config.method],
    }
    start = [f"folder = {folder!r}  # this folder: change it if you move the export", f"settings = {settings!r}"]
    quiet = f"{QUIET_LOAD_REPORT}  # the base holds no head: see below"

    def code(imports: list[str], load: list[str], model_line: str) -> str:
        """A block loading the adapter as ``model`` (``load``, then ``model_line``) and calling it as pals-predict."""
        lines = ["from transformers.utils import logging", "", *start, quiet, *load]
        tokenizer = ["from transformers import AutoTokenizer", "tokenizer = AutoTokenizer.from_pretrained(folder)"]
        # peft's PeftModelForQuestionAnswering.forward drops token_type_ids: the adapted model it wraps is run
        unwrap = "model = model.get_base_model().eval()  # peft's QUESTION_ANS forward would drop token_type_ids"
        loading = "\n".join([*imports, *lines, model_line, *tokenizer, unwrap])
        info = model.run
        own = kind.card_code(
            folder,
            info.max_len,
            pair_stride(info.stride, info.max_len),
            info.scales.get(task),
            loading.replace("{", "{{").replace("}", "}}"),
        )
        if own is not None:  # the kind's own code, after these loading lines
            return _code(*own.rstrip("\n").splitlines())
        if kind.pipeline_task is None:  # no pipeline serves the kind: the head's class itself
            lines = ["import torch", *imports, "from transformers import AutoTokenizer", *lines]
            return _code(*lines, *candidates_code(model, task, model_line))
        call = pipeline_call(model, task)
        lines = [*imports, "from transformers import pipeline", *lines]
        return _code(*lines, model_line, call.line("model", "folder"), call.example_line())

    offline = code(
        ["import os", "", "from peft import PeftModel", f"from transformers import {head}"],
        [f'base = {head}.from_pretrained(os.path.join(folder, os.pardir, "base"), **settings)'],
        "model = PeftModel.from_pretrained(base, folder).eval()",
    )
    method = get_method(model.config.method).title
    if base.is_checkpoint:
        revision = f" at revision `{base.revision}`" if base.revision else ""
        named = f"`{base.name}`{revision}, {base.about}; `../base` holds the same weights"
    else:
        named = f"`{base.name}`, the export's `../base` by its absolute path when exported: {base.about}"
    if kind.peft_task_type is None:  # no AutoPeftModelFor… of the kind: the plain PeftModel over the head's class
        use = [
            f"peft has no task type for a {kind.name} task (no `{auto}`): load the base beside this folder "
            f"(`../base`) as a transformers `{head}` and the adapter over it with `PeftModel`:",
            "",
            offline,
        ]
    else:
        hub = code([f"from peft import {auto}"], [], f"model = {auto}.from_pretrained(folder, **settings)")
        use = [hub, "Offline, or with the export moved, load the base beside this folder (`../base`) yourself:", ""]
        use.append(offline)
    return "\n".join(
        [
            _front(front),
            f"# {task}",
            "",
            _about(model, task),
            f"A peft {method} adapter and the task's head (`modules_to_save`); its base "
            f"(`base_model_name_or_path`) is {named}.",
            "",
            "## Use it as pals-predict does",
            "",
            *use,
            *_reading(model, task),
            "`settings` builds the task's head on a base that has none (`id2label`: its outputs, named; the problem "
            "type; float32, as the run computed). transformers then reports that head MISSING from the base "
            "checkpoint, just before peft loads the trained one: the `logging` line hides that report.",
            "",
        ]
    )


def card_code(card: str) -> list[str]:
    """The Python blocks of a model card, in order."""
    blocks, inside, lines = [], False, []
    for line in card.splitlines():
        if line.strip() == "```python":
            inside, lines = True, []
        elif inside and line.strip() == "```":
            blocks.append("\n".join(lines) + "\n")
            inside = False
        elif inside:
            lines.append(line)
    return blocks


__all__ = [
    "LOAD_REPORT",
    "PipelineCall",
    "QUIET_LOAD_REPORT",
    "candidates_code",
    "card_code",
    "hf_card",
    "peft_card",
    "pipeline_call",
]
