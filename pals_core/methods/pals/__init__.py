"""Projected attention layers, PALs (Stickland & Murray 2019, Sec. 3.3): ``pals`` and ``pals_unshared``."""
