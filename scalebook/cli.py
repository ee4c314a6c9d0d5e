"""The `scalebook` command: the book's calculators from a terminal.

    scalebook chips [--vendor google|nvidia]
    scalebook roofline --chip v5e --shape 1024,8192,28672 [--dtype bf16] [--weight-dtype int8]
    scalebook bench [--dtype fp32]            # calibrate this device and sweep matmuls (needs JAX)
"""

from __future__ import annotations

import argparse
import sys

from .hardware import get_chip, list_chips
from .roofline import critical_batch, matmul
from .units import DTYPE_BYTES

__all__ = ["main", "parse_shape"]


def parse_shape(text: str) -> tuple[int, int, int]:
    """Parse 'B,D,F' (e.g. '1024,8192,28672') into three positive integers."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = tuple(int(float(p)) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) <= 0:
        raise ValueError(f"--shape={text!r} must be three positive integers B,D,F such as 1024,8192,28672")
    return values  # type: ignore[return-value]


def _chips(args: argparse.Namespace) -> str:
    if args.vendor not in (None, "google", "nvidia"):
        raise ValueError(f"--vendor={args.vendor!r}; allowed: google, nvidia")
    return str(list_chips(vendor=args.vendor))


def _roofline(args: argparse.Namespace) -> str:
    B, D, F = parse_shape(args.shape)
    chip = get_chip(args.chip)
    est = matmul(B, D, F, chip, dtype=args.dtype, weight_dtype=args.weight_dtype)
    lines = [str(est)] + [f"  {k:<14} {v}" for k, v in est.summary().items()]
    B_crit = critical_batch(chip, args.dtype, weight_dtype=args.weight_dtype)
    lines.append(f"  {'critical B':<14} {B_crit:.0f} tokens (compute-bound above this, for B << D, F)")
    return "\n".join(lines)


def _bench(args: argparse.Namespace) -> str:
    from . import bench, runtime

    runtime.setup()
    sweep = bench.matmul_sweep(bench.sweep_shapes(), dtype=args.dtype)
    return str(sweep)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scalebook", description="Calculators from the scalebook textbook.")
    sub = parser.add_subparsers(dest="command", required=True)
    chips = sub.add_parser("chips", help="table of accelerator specs")
    chips.add_argument("--vendor", help="google or nvidia")
    chips.set_defaults(run=_chips)
    roof = sub.add_parser("roofline", help="roofline estimate of one matmul X[B,D] @ W[D,F]")
    roof.add_argument("--chip", required=True, help="chip name, e.g. v5e, h100 (see `scalebook chips`)")
    roof.add_argument("--shape", required=True, help="B,D,F e.g. 1024,8192,28672")
    roof.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_BYTES), help="dtype of all arrays")
    roof.add_argument("--weight-dtype", default=None, choices=sorted(DTYPE_BYTES), help="dtype of W only")
    roof.set_defaults(run=_roofline)
    bench = sub.add_parser("bench", help="calibrate this device and time a matmul sweep (needs JAX)")
    bench.add_argument("--dtype", default=None, help="fp32 on CPU by default, bf16 on accelerators")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (2 with a one-line message on bad input)."""
    args = _parser().parse_args(argv)
    try:
        print(args.run(args))
    except (ValueError, KeyError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"scalebook {args.command}: error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
