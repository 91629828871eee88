"""Low-rank layers (Stickland & Murray 2019, Sec. 3.2): a parallel rank-d_s update per adapted layer."""
