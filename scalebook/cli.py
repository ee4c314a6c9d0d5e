"""The `scalebook` command: the book's calculators from a terminal.

    scalebook chips [--vendor google|nvidia]
    scalebook roofline --chip v5e --shape 1024,8192,28672 [--dtype bf16] [--weight-dtype int8]
    scalebook collective all_gather --chip v5e --mesh 4x4 --axes X --bytes 32MiB [--also-sharded Y]
    scalebook collective all_reduce --cluster h100-superpod --gpus 256 --bytes 1GiB [--sharp] [--top-k K]
    scalebook shard "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]" --chip v5p --mesh 4x4x4 --sizes I=1024,J=4096,K=8192
    scalebook plan --model llama3-70b --chip v5p --chips 8960 --batch 4Mi [--seq 4096]
    scalebook plan --model llama3-70b --cluster h100-superpod --chips 4096 --batch 4Mi
    scalebook serve --model llama3-70b --chip v5e --context 8192 --dtype int8
    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]
    scalebook exercises                       # regenerate exercises/ (and the .ipynb twins) from solutions/
    scalebook bench [--dtype fp32]            # calibrate this device and sweep matmuls (needs JAX)
"""

from __future__ import annotations

import argparse
import sys

from .collectives import KINDS, collective
from .hardware.chips import get_chip, list_chips
from .hardware.gpu import PRESETS, get_cluster
from .hardware.topology import TpuMesh
from .roofline import critical_batch, matmul
from .sharding import sharded_matmul
from .units import DTYPE_BYTES, fmt_time, parse_size

__all__ = ["main", "parse_shape", "parse_mesh", "parse_sizes"]


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


def parse_mesh(chip: str, text: str) -> TpuMesh:
    """Parse a slice shape such as '4x4' or '4x4x4' into a `TpuMesh` of `chip` (axes X, Y, Z)."""
    try:
        sizes = [int(p) for p in str(text).lower().split("x")]
    except ValueError:
        sizes = []
    if not 1 <= len(sizes) <= 3:
        raise ValueError(f"--mesh={text!r} must be a shape such as 4x4 or 4x4x4")
    return TpuMesh(chip, **dict(zip("XYZ", sizes)))


def parse_sizes(text: str) -> dict[str, int]:
    """Parse 'I=1024,J=4096,K=8192' into {'I': 1024, 'J': 4096, 'K': 8192}."""
    sizes = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        name, _, value = part.partition("=")
        if not name or not value.isdigit():
            raise ValueError(f"--sizes={text!r} must look like I=1024,J=4096,K=8192")
        sizes[name.strip()] = int(value)
    return sizes


def _collective(args: argparse.Namespace) -> str:
    if args.cluster:
        mesh = get_cluster(args.cluster, args.gpus, args.sharp)
        also = int(args.also_sharded) if args.also_sharded else ()
    else:
        if not (args.chip and args.mesh):
            raise ValueError("give --chip and --mesh for a TPU slice, or --cluster for a GPU cluster")
        mesh, also = parse_mesh(args.chip, args.mesh), args.also_sharded or ()
    est = collective(args.kind, mesh, args.axes, parse_size(args.bytes), also, args.top_k)
    return "\n".join([str(est)] + [f"  {k:<15} {v}" for k, v in est.terms])


def _shard(args: argparse.Namespace) -> str:
    plan = sharded_matmul(args.expr, parse_mesh(args.chip, args.mesh), args.dtype, **parse_sizes(args.sizes))
    return f"{plan}\n\n{plan.table()}"


def _plan(args: argparse.Namespace) -> str:
    from .training import plan

    if bool(args.chip) == bool(args.cluster):
        raise ValueError("give either --chip (a TPU) or --cluster (a GPU system such as h100-superpod)")
    hardware = get_cluster(args.cluster, max(args.chips, get_cluster(args.cluster).gpus)) if args.cluster \
        else args.chip
    result = plan(args.model, hardware, args.chips, parse_size(args.batch), seq_len=args.seq)
    return f"{result}\n\n{result.candidates}"


def _serve(args: argparse.Namespace) -> str:
    from . import inference

    b = DTYPE_BYTES[args.dtype]
    X, Y = inference.smallest_topology(args.model, args.chip, param_bytes=b)
    n = X * Y
    batch = inference.max_batch(args.model, args.chip, n, args.context, param_bytes=b, kv_bytes=b)
    if batch < 1:
        raise ValueError(f"no sequence of {args.context} tokens fits beside the weights on {X}x{Y}; "
                         "try a shorter --context or a smaller --dtype")
    step = inference.decode_step(args.model, args.chip, n, batch, args.context, param_bytes=b, kv_bytes=b)
    rate = step.tokens_per_second / n
    lines = [f"smallest topology   {X}x{Y} ({n} chips, weights only)", f"max batch           {batch} sequences",
             f"decode step         {fmt_time(step.time)} ({step.bound}-bound)", f"tokens/s per chip   {rate:.4g}"]
    try:
        lines.append(f"$ per M tokens      {inference.cost_per_million_tokens(args.chip, rate):.3g}"
                     f" (prices of {inference.prices()['date']})")
    except KeyError:
        lines.append("$ per M tokens      (no price listed for this chip)")
    return "\n".join(lines)


def _grade(args: argparse.Namespace) -> str:
    from pathlib import Path

    from .autograde import grade

    table = grade(Path(args.submissions), Path(args.out), timeout=args.timeout, jobs=args.jobs,
                  sandboxed=not args.no_sandbox, force=args.force)
    return f"{table}\n\nwrote {args.out} and feedback/ beside it"


def _exercises(args: argparse.Namespace) -> str:
    from pathlib import Path

    from .notebooks import sync

    changed = sync(Path.cwd())
    return "\n".join(f"updated {p.relative_to(Path.cwd())}" for p in changed) or "everything was up to date"


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
    coll = sub.add_parser("collective", help="time of a collective on a TPU slice or a GPU cluster")
    coll.add_argument("kind", choices=KINDS)
    coll.add_argument("--chip", default=None, help="a TPU, e.g. v5e, v5p")
    coll.add_argument("--mesh", default=None, help="slice shape, e.g. 4x4 or 4x4x4")
    coll.add_argument("--cluster", default=None, help=f"a GPU system instead: {', '.join(PRESETS)}")
    coll.add_argument("--gpus", type=int, default=None, help="GPUs of the cluster taking part (default: all)")
    coll.add_argument("--sharp", action="store_true", help="the switches reduce in the network (SHARP)")
    coll.add_argument("--axes", default=None, help="mesh axes taking part, e.g. X or XY; 'node' on a cluster")
    coll.add_argument("--bytes", required=True, help="whole array size, e.g. 32MiB or 1.5e9")
    coll.add_argument("--also-sharded", default=None,
                      help="axes the array stays sharded over, e.g. Y (on a cluster: the inner axis size)")
    coll.add_argument("--top-k", type=int, default=None, help="all_to_all only: ragged MoE dispatch to k experts")
    coll.set_defaults(run=_collective)
    shard = sub.add_parser("shard", help="plan a sharded matmul, e.g. 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'")
    shard.add_argument("expr")
    shard.add_argument("--chip", required=True, help="a TPU, e.g. v5p")
    shard.add_argument("--mesh", required=True, help="slice shape, e.g. 4x4x4")
    shard.add_argument("--sizes", required=True, help="dimension sizes, e.g. I=1024,J=4096,K=8192")
    shard.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_BYTES))
    shard.set_defaults(run=_shard)
    train = sub.add_parser("plan", help="choose a training layout (DP, FSDP, TP, FSDP x TP, DCN; PP on GPUs)")
    train.add_argument("--model", required=True, help="a preset, e.g. llama3-70b (see scalebook.models)")
    train.add_argument("--chip", default=None, help="a TPU, e.g. v5p")
    train.add_argument("--cluster", default=None, help=f"or a GPU system: {', '.join(PRESETS)}")
    train.add_argument("--chips", required=True, type=int, help="number of chips (GPUs), e.g. 8960")
    train.add_argument("--batch", required=True, help="global batch in tokens, e.g. 4Mi (= 4·2**20) or 4194304")
    train.add_argument("--seq", type=int, default=4096, help="sequence length in tokens (default 4096)")
    train.set_defaults(run=_plan)
    serve = sub.add_parser("serve", help="smallest topology, max batch, step time and cost of serving a model")
    serve.add_argument("--model", required=True, help="a preset, e.g. llama3-70b")
    serve.add_argument("--chip", required=True, help="e.g. v5e")
    serve.add_argument("--context", type=int, default=8192, help="tokens per sequence (default 8192)")
    serve.add_argument("--dtype", default="bf16", choices=["bf16", "int8", "int4", "fp8"],
                       help="weights and KV cache dtype")
    serve.set_defaults(run=_serve)
    grader = sub.add_parser("grade", help="grade a folder of submitted exercise notebooks into a CSV gradebook")
    grader.add_argument("submissions", help="folder of <student>__NN_slug.ipynb files or per-student folders")
    grader.add_argument("--out", default="gradebook.csv", help="CSV to write (feedback/ goes beside it)")
    grader.add_argument("--timeout", type=float, default=120, help="seconds allowed per cell (default 120)")
    grader.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default 1)")
    grader.add_argument("--force", action="store_true", help="overwrite an existing gradebook at --out")
    grader.add_argument("--no-sandbox", action="store_true",
                        help="run notebooks without a sandbox (trusted work only; every row says so)")
    grader.set_defaults(run=_grade)
    exercises = sub.add_parser("exercises", help="regenerate exercises/ from solutions/ (run in the repository)")
    exercises.set_defaults(run=_exercises)
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
