"""Data for multi-task training: GLUE loading (``glue``), task samplers (``samplers``), metrics (``metrics``)."""
