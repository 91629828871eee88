"""CA-MTL (Pilault, Elhattami & Pal, "Conditionally Adaptive Multi-Task Learning", ICLR 2021): task-conditioned
modules shared by all tasks, one task embedding per task. Its MT-Uncertainty sampler is a task sampler like the
others (``pals_core.data.mt_uncertainty``)."""
