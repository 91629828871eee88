"""This machine, as the answer's device line reads it: its NVIDIA GPUs, its CPU and its host name, and whether a
device profile is of this machine (``elsewhere``). Pure Python, without torch (``pals-budget`` answers in a blink).

The GPUs are the driver's own list (``/proc/driver/nvidia/gpus/*/information``, its ``Model:`` line; where that
folder is absent, ``nvidia-smi --query-gpu=name``), read once per process. A built-in GPU profile is of this machine
when one of its GPUs' names holds the profile's ``match`` word ("H100" in "NVIDIA H100 80GB HBM3", not in
"NVIDIA GH100"); a profile measured by ``pals-calibrate`` (``local``) when it was measured on this host.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from .timing import DeviceProfile, builtin_devices, load_profile, local_profile_path

PROC_GPUS = Path("/proc/driver/nvidia/gpus")


@lru_cache(maxsize=1)
def gpu_names() -> tuple[str, ...]:
    """The names of this machine's NVIDIA GPUs, as the driver gives them ('NVIDIA H100 80GB HBM3'); () for none."""
    try:
        folders = sorted(os.listdir(PROC_GPUS))
    except OSError:
        return _smi_names()
    names = []
    for folder in folders:
        try:
            text = (PROC_GPUS / folder / "information").read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model" and value.strip():
                names.append(value.strip())
    return tuple(names)


def _smi_names() -> tuple[str, ...]:
    """``nvidia-smi``'s GPU names where the driver has no /proc folder (another OS, a container); () without it."""
    smi = next(  # PATH read by hand: shutil and subprocess load only where there is an nvidia-smi to run
        (
            os.path.join(d, "nvidia-smi")
            for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and os.access(os.path.join(d, "nvidia-smi"), os.X_OK)
        ),
        None,
    )
    if smi is None:
        return ()
    import subprocess

    try:
        out = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line.strip() for line in out.stdout.splitlines() if line.strip()) if out.returncode == 0 else ()


@lru_cache(maxsize=1)
def cpu_name() -> str:
    """This machine's CPU model ('AMD EPYC 7763 64-Core Processor'), from /proc/cpuinfo or ``platform``."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "an unknown CPU"


def host_name() -> str:
    import socket  # late: only a measured profile asks

    return socket.gethostname()


def holds(word: str, gpu: str) -> bool:
    """Whether the GPU name ``gpu`` holds ``word`` as a word of its own, any case ('A100' in 'NVIDIA A100-SXM4-80GB';
    'L4' not in 'NVIDIA L40S')."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", gpu, re.IGNORECASE) is not None


def builtin_for_gpu(gpu: str) -> str | None:
    """The built-in profile (``h100``, …) of the GPU named ``gpu`` (a driver's or ``torch.cuda.get_device_name``'s
    name), or None."""
    for key in builtin_devices():
        if key == "local":
            continue
        word = load_profile(key).match
        if word and holds(word, gpu):
            return key
    return None


def is_here(profile: DeviceProfile) -> bool:
    """Whether this machine holds the device ``profile`` describes (see the module docstring); a GPU profile with
    no ``match`` word (a profile file) by its name."""
    if profile.kind == "cuda":
        word = profile.match
        return any(
            holds(word, g) if word else g.lower() in profile.name.lower() or profile.name.lower() in g.lower()
            for g in gpu_names()
        )
    return profile.host is None or profile.host == host_name()


def this_machine() -> str:
    """This machine in a few words: its GPUs, else its CPU."""
    gpus = sorted(set(gpu_names()))
    return f"its GPU: {', '.join(gpus)}" if gpus else f"no NVIDIA GPU; its CPU: {cpu_name()}"


def _local_is_here() -> bool:
    """Whether ``pals-calibrate``'s profile (``local``) exists and was measured here."""
    if not local_profile_path().is_file():
        return False
    try:
        return is_here(load_profile("local"))
    except ValueError:
        return False


def elsewhere(profile: DeviceProfile) -> str | None:
    """None where this machine holds the profiled device; else the sentence the answer says first: its step times
    and memory are for that device, this machine is not it, and the ``--device`` that prices this machine."""
    if is_here(profile):
        return None
    own = [key for key in map(builtin_for_gpu, gpu_names()) if key]
    if own:
        how = f"--device {own[0]} prices this machine's GPU"
    elif _local_is_here():
        how = "--device local prices this machine (pals-calibrate measured it)"
    else:
        how = "pals-calibrate measures this machine, then --device local prices it"
    measured = f", measured on {profile.host}" if profile.kind == "cpu" and profile.host else ""
    return f"Step times and memory are for {profile.name}{measured}; this machine is not it ({this_machine()}): {how}."
