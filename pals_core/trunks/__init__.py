"""The family-neutral torch machinery of a trunk (``base``: ``Trunk``, ``State``, ``DenseHead``, ``make_mask``) that
each family folder's ``trunk.py`` builds on. The registry of the folders' trunks (``trunk_for``, ``build_base``,
``load_base``, ``trunk_class``, ``TRUNKS``) stands above them: ``pals_core.families.trunks``.
"""
