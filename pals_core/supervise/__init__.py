"""Process supervision: the training runs and study workers launched in the background (by the explorer or by
``pals-runs``) — start them detached, prove a pid is the one we launched, cancel it, resume it. The folder on disk
is the registry and the truth; every status is derived from it on each read, so the explorer, a restarted server
and ``pals-runs`` see the same thing. See docs/design.md (process supervision).

- ``roots``: where the folders live (``$PALS_RUNS_DIR``, default ./runs; workers in ``<runs>/study-workers``);
- ``children``: the processes this process launched (``spawn``), kept with their ``Popen``; exit statuses
  (``record_exit``, ``exit.json``);
- ``proof``: whether a pid is provably the process launched for a folder (start time + command line, or the run
  lock), never a file's word;
- ``signals``: SIGTERM (then SIGKILL after a grace period, when asked) to a proven process;
- ``runs``: training runs (``launch``, ``load_run``, ``list_runs``, ``cancel``, ``resume``);
- ``workers``: study workers (``load_worker``, ``list_workers``, ``start``, ``stop``, ``resume``) given their
  argument lists, which ``studies.workers`` builds from the study's settings;
- the command ``pals-runs list|cancel|resume`` is ``pals_core/cli/runs.py``.

The explorer imports this package; nothing here imports the explorer.
"""
