"""LoRA (Hu et al. 2021): a rank-d_s update on the query and value projections of each adapted layer."""
