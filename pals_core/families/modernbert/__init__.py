"""ModernBERT (``model_type`` modernbert). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py``."""
