"""The PALs Explorer web app (``streamlit run app.py``): UI only, every number comes from ``pals_core.budget``.

Pure modules (no streamlit): ``inputs`` (widget values → a validated ``Inputs``), ``calc`` (the
calculator calls the page makes), ``figures`` (rows → plotly figures), ``tables`` (rows → tables and CSV),
``commands`` (a design → a ``pals-train`` argument list and shell commands), ``registry`` and
``study_workers`` (the names the views use for ``pals_core.supervise``: runs and study workers on disk — launch,
watch, cancel, resume; no process logic lives in the explorer). Views: ``sidebar``, ``design_view``, ``tasks_view`` (the
question's tasks: rows, labels, majority class, token lengths), ``train_view``, ``runs_view``, ``page`` (the one
page ``app.py`` draws); ``studies_view`` belongs to the studies.
"""
