"""DistilBERT (``model_type`` distilbert). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py``."""
