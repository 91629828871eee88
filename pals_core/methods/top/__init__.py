"""Task-specific stacks on top of the shared BERT (Stickland & Murray 2019, Sec. 3.1 and Table 1):
``proj_attn_top``, ``proj_ffn_top``, ``bert_layer_top``."""
