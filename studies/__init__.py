"""Optuna studies over PALs Explorer designs: which adapter, where, how large (``design``, ``design-pareto``),
which task-sampling schedule (``alpha-schedule``) and which optimiser settings (``optimizer``) work best for a
parameter budget. Each trial is a real multi-task training run (``pals_core.train``); the feasible sizes come
from the calculator (``pals_core.budget``). Command line: ``pals-study`` (``studies.cli``); figures and tables:
``studies.report``; storage and distributed workers: ``studies.storage``, ``studies.runner``.
"""
