"""ELECTRA discriminators (``model_type`` electra). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py``."""
