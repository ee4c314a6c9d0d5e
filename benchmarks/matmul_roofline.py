"""Measure this device's matmul roofline and compare it with the analytic prediction.

    python benchmarks/matmul_roofline.py [--out benchmarks/out] [--dtype bf16] [--spec h100]

Writes `matmul_sweep.csv`, `matmul_sweep.md` and `matmul_sweep.png` to --out. The prediction uses the
calibrated chip (measured peak FLOP/s and bandwidth) and, with --spec, also the spec-sheet chip, so the
table shows both how good the model is and how far this device falls below its datasheet.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import scalebook as sb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"))
    parser.add_argument("--dtype", default=None, help="fp32 on a CPU, bf16 on an accelerator by default")
    parser.add_argument("--spec", default=None, help="also predict with this chip's datasheet (e.g. h200)")
    parser.add_argument("--D", type=int, default=4096)
    parser.add_argument("--F", type=int, default=4096)
    args = parser.parse_args()

    print(sb.setup().summary())
    chip = sb.bench.calibrate(args.dtype)
    sweep = sb.bench.matmul_sweep(sb.bench.sweep_shapes(args.D, args.F), dtype=args.dtype, chip=chip)
    rows = sweep.table.rows
    if args.spec:
        spec = sb.get_chip(args.spec)
        for row in rows:
            row["spec predicted"] = sb.roofline.matmul(row["B"], row["D"], row["F"], spec, dtype=sweep.dtype).time
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "matmul_sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (args.out / "matmul_sweep.md").write_text(f"{chip.name}\n\n{sweep}\n")
    sb.plots.roofline.sweep(sweep).savefig(args.out / "matmul_sweep.png", dpi=120)
    print(sweep)
    # the comparison chapter 1 shows but does not gate (its test only checks 10x): here it is the verdict
    print(sb.grading.Comparison(sweep.median_ratio, 1.0, rtol=0.5, source="calibrated roofline, this device",
                                label="median measured/predicted"))


if __name__ == "__main__":
    main()
