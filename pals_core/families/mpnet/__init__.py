"""MPNet (``model_type`` mpnet). ``description.py`` (pure Python), ``trunk.py`` (torch), ``presets.py``."""
