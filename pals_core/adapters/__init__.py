"""The torch side every method's module is built from: ``TaskAdapter`` and its hooks, ``BuildContext``,
``AdapterSpec`` and init helpers (``base``) and the small multi-head attention in d_s (``attention``). The methods'
modules live in ``pals_core/methods/<name>/module.py``; their registry of builders (``ADAPTERS``, ``get_adapter``)
stands above them, ``pals_core.methods.adapters``. ``pals_core.model.MultiTaskBert`` wires them into a shared
Hugging Face base model.
"""
