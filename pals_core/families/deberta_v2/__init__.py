"""DeBERTa-v2 / v3 (``model_type`` deberta-v2). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py``."""
