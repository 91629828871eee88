"""The explorer's figures: pure functions, calculator rows → plotly figures. No streamlit, no maths of their own.

Each figure answers one question a person has, and says how to read it in its title; one module per figure drawn:
- ``size_curves``: how many parameters per task does each method spend as d_s grows, where is the budget, and which
  size did the solver pick?
- ``design_space``: which designs spend the budget for the least extra compute (Pareto front)?
- ``breakdown``: where do one task's parameters go (one design, or every fitting design side by side)?
- ``scaling``: what does it cost to run all tasks on one input as tasks are added?
- ``paper``: does the calculator reproduce the paper's sizes (disagreements in red)?
- ``measured``: what dev score did each trained design reach for its task-specific parameters, and which scored best
  (are the differences outside the intervals)?

Shared by them: ``style`` (one colour per method, a marker and dash per location, the plain-data ``Fig`` and the common
look) and ``legibility`` (labels that can be read, colours that can be told apart). The page's tables are
``explorer.tables``.
"""
