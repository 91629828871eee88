"""What a design takes of a machine beyond its parameter count (pure Python, no torch): the bytes a training or
inference step holds (``memory``: the family's forward replayed on the symbolic tensors of
``pals_core.pricing.activations``), the seconds a step takes on a device (``timing``, with the built-in profiles in
``devices/``), and the memory and time constraints a design may be held to (``constraints``). It stands above the
family registry it replays through and below the calculator (``pals_core.budget.machine`` prices a design on a
machine with it).
"""
