"""``pals-calibrate``: measure this machine's ``local`` device profile (docs/design.md "Time") in a few seconds.

With torch at the thread count in force (``--threads N`` sets it), each figure of ``footprint.timing.DeviceProfile``
from one micro-benchmark (the fastest of several repeats — robust on a shared machine; process CPU time with one
thread, wall time otherwise):

- matmul_flops: a 1024 × 1024 by 1024 × 1024 matmul, 2·1024³ / t
- bandwidth: x + y on 2²² floats, 3·16 MiB / t
- kernel_overhead_s: a chain of 200 tiny multiplications, forward + backward, per op
- rng_s_per_element: ``bernoulli_`` on 2²² floats, per element, less its write
- special_s_per_element: GELU on 2²² floats, per element, less its memory traffic
- flash_forward / flash_backward: ``F.scaled_dot_product_attention`` (B = 2, h = 12, n = 128) at head widths 8 and
  32, forward and forward + backward, per score element: a + b·d_h fitted through the two widths
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..atomic import atomic_write_text
from ..flags import OneLineParser
from ..footprint.here import cpu_name, host_name
from ..footprint.timing import DeviceProfile, local_profile_path


def _clock(threads: int) -> Callable[[], float]:
    return time.process_time if threads == 1 else time.perf_counter


def _fastest(fn: Callable[[], object], clock, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return max(best, 1e-9)


def measure(threads: int | None = None, name: str = "local") -> DeviceProfile:
    import torch
    import torch.nn.functional as F

    if threads is not None:
        torch.set_num_threads(threads)
    threads = torch.get_num_threads()
    clock = _clock(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        a = torch.randn(1024, 1024)
        flops = 2 * 1024**3 / _fastest(lambda: a @ a, clock)
        x, y = torch.randn(1 << 22), torch.randn(1 << 22)
        bandwidth = 3 * x.numel() * 4 / _fastest(lambda: x + y, clock, repeats=15)  # the most contention-prone figure
        rng = max(_fastest(lambda: x.bernoulli_(0.9), clock) - x.numel() * 4 / bandwidth, 0.0) / x.numel()
        special = max(_fastest(lambda: F.gelu(y), clock) - 2 * y.numel() * 4 / bandwidth, 0.0) / y.numel()

    def chain() -> None:
        z = w
        for _ in range(200):
            z = z * 1.0001
        z.sum().backward()

    w = torch.ones(16, requires_grad=True)
    overhead = _fastest(chain, clock) / 400

    def attention(dh: int, backward: bool) -> float:
        q, k, v = (torch.randn(2, 12, 128, dh, requires_grad=backward) for _ in range(3))

        def run() -> None:
            out = F.scaled_dot_product_attention(q, k, v)
            if backward:
                out.sum().backward()

        if not backward:
            with torch.no_grad():
                return _fastest(run, clock) / (2 * 12 * 128 * 128)
        return _fastest(run, clock) / (2 * 12 * 128 * 128)

    fwd = {dh: attention(dh, False) for dh in (8, 32)}
    both = {dh: attention(dh, True) for dh in (8, 32)}
    bwd = {dh: max(both[dh] - fwd[dh], 0.0) for dh in (8, 32)}

    def fit(per: dict) -> tuple[float, float]:
        slope = max((per[32] - per[8]) / 24, 0.0)
        return max(per[8] - 8 * slope, 0.0), slope

    return DeviceProfile(
        name=name,
        kind="cpu",
        matmul_flops=flops,
        bandwidth=bandwidth,
        kernel_overhead_s=overhead,
        rng_s_per_element=rng,
        special_s_per_element=special,
        flash_forward=fit(fwd),
        flash_backward=fit(bwd),
        threads=threads,
        source=f"pals-calibrate on {cpu_name()}, torch {torch.__version__}, {threads} thread(s)",
        host=host_name(),  # the answer says when it prices this profile on another machine
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = OneLineParser(prog="pals-calibrate", description=__doc__.splitlines()[0])
    p.add_argument("--threads", default=None, help="torch threads to measure with (default: the count in force)")
    p.add_argument(
        "--out",
        default=None,
        help=f"profile file to write (default: ${'PALS_LOCAL_PROFILE'} or {local_profile_path()})",
    )
    try:
        args = p.parse_args(argv)
        threads = None
        if args.threads is not None:
            try:
                threads = int(args.threads)
            except ValueError:
                raise ValueError(f"--threads {args.threads!r} is not an integer") from None
            if threads < 1:
                raise ValueError(f"--threads must be a positive integer, got {args.threads!r}")
        if args.out is not None and not args.out.strip():  # "" used to mean the default profile, silently
            raise ValueError(
                f"--out is empty: give the profile's path, or leave --out out for the default ({local_profile_path()})"
            )
        out = Path(args.out).expanduser() if args.out is not None else local_profile_path()
        if out.is_dir():
            raise ValueError(f"--out {out} is a folder; give the profile file's path (e.g. {out / 'local.json'})")
        out.parent.mkdir(parents=True, exist_ok=True)  # before measuring: a bad --out costs no measurement
        profile = measure(threads)
        atomic_write_text(out, json.dumps(profile.as_dict(), indent=2) + "\n")  # nothing half-written stays behind
    except ValueError as e:
        print(f"pals-calibrate: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"pals-calibrate: error: cannot write the profile: {e}", file=sys.stderr)
        return 2
    print(
        f"{out}: {profile.matmul_flops / 1e9:.1f} GFLOP/s matmul, {profile.bandwidth / 1e9:.1f} GB/s, "
        f"{profile.kernel_overhead_s * 1e6:.1f} µs per op, {profile.threads} thread(s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
