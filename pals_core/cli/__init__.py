"""The core's console scripts, one module per command (``[project.scripts]`` in pyproject.toml): ``budget``
(``pals-budget``), ``train`` (``pals-train``), ``predict`` (``pals-predict``), ``export`` (``pals-export``), ``tasks``
(``pals-tasks``), ``runs`` (``pals-runs``), ``calibrate`` (``pals-calibrate``). Each parses its flags, calls the
package that does the work and turns bad input into one line and exit status 2. ``pals-study`` is ``studies/cli.py``:
the studies stand above the core."""
