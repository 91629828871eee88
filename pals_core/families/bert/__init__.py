"""BERT (MiniLM included) and the RoBERTa family (RoBERTa, XLM-R, CamemBERT): one layer, two families (``FAMILIES``,
``TRUNKS``). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py`` (the published configs)."""
