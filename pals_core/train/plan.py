"""The plan of a run made of runs: one JSON file in the parent folder, beside the runs it names (docs/design.md "Baselines and repeated runs").

    OUT/seeds.json       {"kind": "pals-train/seeds", "seeds", "separate", "template"}        (``seeds.SeedsPlan``)
    OUT/separate.json    {"kind": "pals-train/separate", "steps_per_task", "eval_every_per_task",
                          "train_examples", "rule", "template"}                              (``separate.SeparatePlan``)

A plan is written once, atomically (``pals_core.atomic``: a reader never sees half of it, a kill never leaves half of
it), before any of its runs starts, and read back by ``--resume``, by the studies and by ``pals-export``. ``template``
is the resolved ``TrainConfig`` the runs are made from; read back, its ``out`` is the folder it was read from (a
moved folder resumes where it lies now). Every reading goes through ``Plan.read``: a plan that is missing, damaged or
of the other kind is a ``ValueError`` in one line, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, TypeVar

from ..atomic import atomic_write_json, read_json_file
from .config import RESUME_FREE, TrainConfig

P = TypeVar("P", bound="Plan")

#: the machine-local settings a resumed plan's runs take from the invocation that resumes them (where the data,
#: the cache and the weights lie, the device and threads); ``out`` is the folder the plan is read from
LOCAL_FIELDS = tuple(f for f in RESUME_FREE if f != "out")


def with_local(template: TrainConfig, local: TrainConfig) -> TrainConfig:
    """``template`` with the machine-local settings (``LOCAL_FIELDS``) of ``local``."""
    return replace(template, **{f: getattr(local, f) for f in LOCAL_FIELDS})


@dataclass
class Plan:
    """What a parent's runs are: a template and what each kind of plan adds (``fields`` / ``from_fields``)."""

    FILE: ClassVar[str]  # the plan's file name in the parent folder
    KIND: ClassVar[str]  # its "kind": what tells one plan from another
    WHAT: ClassVar[str]  # how messages name it

    template: TrainConfig  # resolved; out = the parent folder

    @property
    def out(self) -> Path:
        return Path(self.template.out)

    def fields(self) -> dict:
        """The plan's own keys, beside ``kind`` and ``template``."""
        raise NotImplementedError

    @classmethod
    def from_fields(cls: type[P], template: TrainConfig, d: dict) -> P:
        """The plan from its template and the file's keys (``KeyError`` / ``TypeError`` / ``ValueError`` if bad)."""
        raise NotImplementedError

    def as_dict(self) -> dict:
        return {"kind": self.KIND, **self.fields(), "template": self.template.as_dict()}

    @classmethod
    def file(cls, out: str | Path) -> Path:
        return Path(out) / cls.FILE

    @classmethod
    def held_in(cls, out: str | Path) -> bool:
        """Whether ``out`` holds a plan of this kind (its file is there; ``read`` says whether it is whole)."""
        return cls.file(out).is_file()

    def write(self) -> None:
        """OUT/<FILE>, atomically (the folder is made if need be)."""
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.file(self.out), self.as_dict())

    @classmethod
    def read_dict(cls, out: str | Path) -> dict:
        """The plan file's object, its kind checked; ``ValueError`` in one line otherwise. Never opens a FIFO nor
        parses past the size limit (``read_json_file``): a page may call it on any folder."""
        path = cls.file(out)
        d = read_json_file(path, cls.WHAT)
        if not isinstance(d, dict) or d.get("kind") != cls.KIND:
            raise ValueError(f"{path} is not a {cls.WHAT}")
        return d

    @classmethod
    def read(cls: type[P], out: str | Path, local: TrainConfig | None = None) -> P:
        """The plan in ``out`` (template's ``out`` = ``out``), with ``local``'s machine-local settings if given;
        ``ValueError`` in one line for a plan that is missing, damaged or of another kind."""
        d = cls.read_dict(out)
        path = cls.file(out)
        try:
            template = TrainConfig.from_dict({**d["template"], "out": str(out)})
            plan = cls.from_fields(template, d)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            detail = f"no {e}" if isinstance(e, KeyError) else " ".join(str(e).split())
            raise ValueError(f"{path} is a damaged {cls.WHAT} ({detail})") from None
        if local is not None:
            plan.template = with_local(plan.template, local)
        return plan
