"""Data for multi-task training: GLUE's rows from the official files or the hub (``glue_rows``), task samplers
(``samplers``), metrics (``metrics``)."""
