"""The page's address: its question in the URL query string (docs/design.md "The explorer's address"), both ways. Pure
Python.

Keys: ``model`` (a preset — the embedded model by its one name, ``all-MiniLM-L6-v2``; ``embedded-minilm`` of older
links is read as it — ``tiny`` or a checkpoint folder), ``tasks`` (GLUE names
``cola,rte`` or a count ``8``) or ``tasks_file`` (the path of a tasks file on the server), one of ``budget``
(a ratio) / ``extra`` / ``per_task`` (counts such as ``15M``),
``budget_of`` (what a ratio is taken against: ``base`` or ``non-embedding``, ``Budget.OF``; written with a ratio),
``methods`` (comma list), ``location`` (``every``, ``all``, ``top``, ``bottom`` or layers ``0,1``), ``heads``,
``seq_len``, ``convention``, one key per machine constraint record (its ``Machine`` field: ``memory``,
``max_slowdown``, ``memory_infer``, …; ``pals_core.footprint.constraints.CONSTRAINTS``); and the page's own ``view`` and
``design`` (the chosen row).

``to_query(raw, view, design)`` writes the sidebar's values; ``from_query(params)`` reads a link back into
sidebar widget values, returning one error line per bad key (the page shows them with ``st.error``; a bad
key is ignored, the rest of the link still applies). There is no second parser here: every value is read by the
CLIs' own (``READERS``): the budget keys together by ``solver.budget_from_flags`` (pals-budget's ``--budget`` /
``--extra`` / ``--per-task`` / ``--budget-of``), ``tasks`` by ``parse_tasks``, ``methods`` by ``parse_methods``
(pals-study ``--methods``), ``location`` and ``heads`` by ``AdapterConfig``'s flags, ``seq_len`` by
``parse_positive_int`` and the model family's ``check_seq_len``, each bound by its ``Machine`` flag. A number the
sidebar's field cannot hold is refused with its range — never left to Streamlit, which would silently reset it to
the field's minimum.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pals_core.budget.costs import CONVENTIONS
from pals_core.budget.methods import parse_methods, resolve_layers
from pals_core.budget.solver import Budget, budget_from_flags
from pals_core.budget.tasks import parse_tasks
from pals_core.families.shapes import ALIASES, PRESETS
from pals_core.flags import flags_of
from pals_core.footprint.constraints import CONSTRAINTS
from pals_core.pricing.config import AdapterConfig, format_location
from pals_core.pricing.units import parse_positive_int

from .inputs import (
    EMBEDDED,
    LOCAL,
    LOCATION_CHOICES,
    LOCATION_CUSTOM,
    LOCATION_EVERY,
    TASKS_COUNT,
    TASKS_FILE,
    TASKS_GLUE,
    TINY,
    RawInputs,
    bound_key,
    check_sidebar_range,
    file_model_widgets,
    model_of,
    parse_bound,
    seq_len_for,
)

KEYS = (
    "model",
    "tasks",
    "tasks_file",
    "budget",
    "budget_of",
    "extra",
    "per_task",
    "methods",
    "location",
    "heads",
    "seq_len",
    "convention",
    *(c.field for c in CONSTRAINTS),
    "view",
    "design",
)
BUDGET_KEYS = {"ratio": "budget", "extra": "extra", "per-task": "per_task"}  # sidebar budget kind → URL key
FLAG_KEYS = {"--budget-of": "budget_of", "--budget:": "budget", "--extra": "extra", "--per-task": "per_task"}
"""The budget flags the CLIs' reader names in its errors → the address key a person wrote."""
MODEL_KEYS = {TINY: "tiny"}  # the embedded model goes by its one name (a preset), as pals-budget --model
OLD_KEYS = {"embedded-minilm": EMBEDDED}  # links written before
EVERY = "every"


@dataclass
class FromLink:
    """What a link sets: sidebar widget values (by widget key), the view and chosen design, and the
    lines that say which values were bad."""

    widgets: dict = field(default_factory=dict)
    view: str | None = None
    design: str | None = None
    errors: list = field(default_factory=list)


def to_query(raw: RawInputs, view: str | None = None, design: str | None = None) -> dict[str, str]:
    """The question (and the view) as query-string keys. A model from an uploaded file has no address:
    ``model`` is left out and the link opens the default model."""
    q: dict[str, str] = {}
    if raw.model in MODEL_KEYS:
        q["model"] = MODEL_KEYS[raw.model]
    elif raw.model == LOCAL:
        if raw.model_path.strip():
            q["model"] = raw.model_path.strip()
    elif raw.model in PRESETS:
        q["model"] = raw.model
    if raw.task_mode == TASKS_FILE:
        if (raw.tasks_file or "").strip():
            q["tasks_file"] = raw.tasks_file.strip()
    else:
        q["tasks"] = ",".join(raw.glue_tasks) if raw.task_mode == TASKS_GLUE else str(int(raw.task_count))
    q[BUDGET_KEYS.get(raw.budget_kind, "budget")] = (raw.budget_value or "").strip()
    if raw.budget_kind == "ratio":
        q["budget_of"] = raw.budget_of
    q["methods"] = ",".join(raw.methods)
    if raw.location == LOCATION_EVERY:
        q["location"] = EVERY
    elif raw.location == LOCATION_CUSTOM:
        q["location"] = (raw.location_custom or "").replace(" ", "")
    else:
        q["location"] = raw.location
    q["heads"], q["seq_len"], q["convention"] = str(raw.heads), str(raw.seq_len), raw.convention
    for c in CONSTRAINTS:  # each machine bound given, under its Machine field's name (as pals-budget's flag)
        text = str((raw.bounds or {}).get(c.field) or "").strip()
        if text:
            q[c.field] = text
    if view:
        q["view"] = view
    if design:
        q["design"] = design
    return q


def _one(value: str | list) -> str:
    return str(value[-1] if isinstance(value, list) and value else value).strip()


def from_query(params: Mapping[str, str | list], views: tuple[str, ...] = ()) -> FromLink:
    """Read a link. Unknown keys are errors too (a typo should not pass silently)."""
    out = FromLink()
    link = {key: _one(value) for key, value in params.items()}

    def bad(key: str, why: str) -> None:
        out.errors.append(f"the link's {key}={link[key]!r} was not used: {why}")

    for key in link:
        if key not in KEYS:
            bad(key, f"unknown key (the address knows {', '.join(KEYS)})")
    for key, read in READERS:
        if key in link:
            try:
                out.widgets.update(read(link[key], out.widgets))
            except ValueError as e:
                bad(key, str(e))
    _read_budget(link, out, bad)
    if "view" in link:
        if not views or link["view"] in views:
            out.view = link["view"]
        else:
            bad("view", f"the views are {', '.join(views)}")
    if "design" in link:
        out.design = link["design"]  # checked against the table on the page
    return out


def _model(v: str, widgets: dict) -> dict:
    name = OLD_KEYS.get(v) or ALIASES.get(v, v)
    if name in PRESETS:
        return {"model": name}
    if v in MODEL_KEYS.values():
        return {"model": next(k for k, key in MODEL_KEYS.items() if key == v)}
    if os.path.isfile(os.path.join(v, "config.json")):
        return {"model": LOCAL, "model_path": v}
    raise ValueError(f"not a preset ({', '.join(PRESETS)}), tiny, nor a folder holding config.json")


def _tasks_file(v: str, widgets: dict) -> dict:
    if not os.path.isfile(os.path.expanduser(v)):
        raise ValueError("no such file on this server")
    own = {} if "model" in widgets else file_model_widgets(v)  # the file's model, unless the link names one
    return {"task_mode": TASKS_FILE, "tasks_file": v, **own}


def _tasks(v: str, widgets: dict) -> dict:
    if widgets.get("task_mode") == TASKS_FILE:
        raise ValueError("give tasks or tasks_file, not both (the tasks file's tasks are used)")
    tasks = parse_tasks(v)  # pals-budget --tasks
    if v.lstrip("+").isdigit():
        return {"task_mode": TASKS_COUNT, "task_count": len(tasks)}
    return {"task_mode": TASKS_GLUE, "glue_tasks": [t.name for t in tasks]}


def _methods(v: str, widgets: dict) -> dict:
    return {"methods": parse_methods(v)}  # pals-study --methods


def _location(v: str, widgets: dict) -> dict:
    if v == EVERY:
        return {"location": LOCATION_EVERY}
    location = _design_flag("location").read(v)  # the design's --location
    resolve_layers(location, 10**6)  # the form (0-based integers); the model's depth is checked on the page
    if location in LOCATION_CHOICES:
        return {"location": location}
    return {"location": LOCATION_CUSTOM, "location_custom": format_location(location)}


def _heads(v: str, widgets: dict) -> dict:
    value = _design_flag("heads").read(v)  # the design's --heads
    if value < 1:  # as the calculator refuses it (methods.check_config), before the sidebar's range
        raise ValueError(f"adapter heads must be a positive integer, got {value}")
    check_sidebar_range("heads", NUMBER_NAMES["heads"], value)
    return {"heads": value}


NUMBER_NAMES = {"heads": "adapter heads h_s", "seq_len": "sequence length"}


def _seq_len(v: str, widgets: dict) -> dict:
    """A link's ``seq_len``, read as ``pals-budget --seq-len`` reads it (``parse_positive_int``, then the link's model's
    own limit, its family's ``check_seq_len``; a model that cannot be read is named by the page instead), then a
    length the sidebar's field can hold (Streamlit would reset any other to the field's minimum without a word)."""
    value = parse_positive_int(v, "seq_len")
    try:
        model = model_of(widgets.get("model", RawInputs.model), widgets.get("model_path", ""))
    except (ValueError, TypeError, OSError):  # the page names what is wrong with the model
        model = None
    if model is not None:  # the model's own limit first: it is the range that matters to the question
        seq_len_for(model, value)
    check_sidebar_range("seq_len", NUMBER_NAMES["seq_len"], value)
    return {"seq_len": value}


def _convention(v: str, widgets: dict) -> dict:
    if v not in CONVENTIONS:  # pals-budget --convention's choices
        raise ValueError(f"use {' or '.join(CONVENTIONS)}")
    return {"convention": v}


def _bound(c) -> Callable[[str, dict], dict]:
    def read(v: str, widgets: dict) -> dict:
        parse_bound(c.field, v)  # the machine's --<field>: the flag pals-budget and pals-study read it with
        return {bound_key(c): v}

    return read


READERS: tuple[tuple[str, Callable[[str, dict], dict]], ...] = (
    ("model", _model),
    ("tasks_file", _tasks_file),
    ("tasks", _tasks),
    ("methods", _methods),
    ("location", _location),
    ("heads", _heads),
    ("seq_len", _seq_len),
    ("convention", _convention),
    *((c.field, _bound(c)) for c in CONSTRAINTS),
)
"""Each key of the address (but the budget's, read together) and its reader: the value → sidebar widget values, or
``ValueError`` in one line. In this order: ``seq_len`` is checked against the link's model."""


def _design_flag(name: str):
    return next(f for f in flags_of(AdapterConfig) if f.name == name)


def _read_budget(link: dict, out: FromLink, bad) -> None:
    """The budget keys, read together by the CLIs' reader (``solver.budget_from_flags``: one of --budget, --extra,
    --per-task, and --budget-of for a ratio). A bad budget leaves the sidebar's; ``budget_of`` is checked against
    ``Budget.OF`` first (pals-budget --budget-of's choices)."""
    given = {kind: link[key] for kind, key in BUDGET_KEYS.items() if key in link}
    of = link.get("budget_of")
    if of is not None and of not in Budget.OF:
        bad("budget_of", f"use {' or '.join(Budget.OF)}")
        of = None
    if not given and of is None:
        return
    try:
        budget_from_flags(given.get("ratio"), given.get("extra"), given.get("per-task"), of=of)
    except ValueError as e:
        named = (
            [key for flag, key in FLAG_KEYS.items() if flag in str(e) and key in link]
            or [BUDGET_KEYS[k] for k in given]
            or ["budget_of"]
        )
        bad(named[-1], str(e))  # the flag the CLIs' reader names: the last of a conflict is the one left out
        if "conflicting" not in str(e) or len(given) < 2:
            return
        given = dict(list(given.items())[:1])  # the first budget still applies, as the sidebar holds one
        try:
            budget_from_flags(given.get("ratio"), given.get("extra"), given.get("per-task"), of=of)
        except ValueError:
            return
    for kind, v in given.items():
        out.widgets["budget_kind"], out.widgets[f"budget_{kind}"] = kind, v
    if of is not None:
        out.widgets["budget_of"] = of


def link_budget(kind: str, value: float) -> str:
    """A budget value as a person types it: ratios rounded UP to 6 decimals (so the design still fits), counts whole."""
    if kind == "ratio":
        return f"{math.ceil(value * 1e6) / 1e6:.6f}".rstrip("0").rstrip(".")
    return str(int(math.ceil(value)))
