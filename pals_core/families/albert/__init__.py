"""ALBERT (Lan et al. 2020, "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations"):
``model_type`` albert — factorised E → d embeddings and one layer's weights shared by all L layers.
``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py`` (the published configs)."""
