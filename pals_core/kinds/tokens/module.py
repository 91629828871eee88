"""The torch part of token classification: engineer T1's (the per-token loss and the dev outputs); a stand-in on the
rows' branch so that the registry's check (every kind a folder with a pure part and a torch part) holds."""

from __future__ import annotations
