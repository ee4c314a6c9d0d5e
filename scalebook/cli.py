"""The `scalebook` command: the book's calculators from a terminal.

    scalebook chips [--vendor google|nvidia]
    scalebook roofline --chip v5e --shape 1024,8192,28672 [--dtype bf16] [--weight-dtype int8]
    scalebook collective all_gather --chip v5e --mesh 4x4 --axes X --bytes 32MiB [--also-sharded Y]
    scalebook collective all_reduce --cluster h100-superpod --gpus 256 --bytes 1GiB [--sharp] [--top-k K]
    scalebook shard "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]" --chip v5p --mesh 4x4x4 --sizes I=1024,J=4096,K=8192
    scalebook plan --model llama3-70b --chip v5p --chips 8960 --batch 4Mi [--seq 4096]
    scalebook plan --model llama3-70b --cluster h100-superpod --chips 4096 --batch 4Mi
    scalebook plan --model llama3-70b --chip h100 --chips 1000 --batch 4Mi   # a GPU: its default cluster
    scalebook serve --model llama3-70b --chip v5e --context 8192 --dtype int8
    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]
    scalebook exercises                       # regenerate exercises/ (and the .ipynb twins) from solutions/
    scalebook bench [--dtype fp32]            # calibrate this device and sweep matmuls (needs JAX)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import bench, inference, runtime
from .autograde import grade
from .collectives import KINDS, collective
from .estimate import feasibility
from .hardware.chips import get_chip, list_chips
from .hardware.gpu import PRESETS, GpuCluster, get_cluster
from .hardware.topology import TpuMesh
from .notebooks import sync
from .roofline import critical_batch, matmul
from .sharding import sharded_matmul
from .training.planner import plan
from .units import DTYPE_BYTES, check_choice, check_int, fmt_time, parse_size

__all__ = ["main", "parse_shape", "parse_mesh", "parse_sizes"]


def parse_shape(text: str) -> tuple[int, int, int]:
    """Parse 'B,D,F' (e.g. '1024,8192,28672') into three positive integers."""
    try:
        values = tuple(check_int(name, float(p)) for name, p in zip("BDF", str(text).split(",")))
    except ValueError:
        values = ()
    if len(values) != 3 or len(str(text).split(",")) != 3:
        raise ValueError(f"--shape={text!r} must be three positive integers B,D,F such as 1024,8192,28672")
    return values  # type: ignore[return-value]


def parse_mesh(chip: str, text: str) -> TpuMesh:
    """Parse a slice shape such as '4x4' or '4x4x4' into a `TpuMesh` of `chip` (axes X, Y, Z)."""
    try:
        sizes = [int(p) for p in str(text).lower().split("x")]
    except ValueError:
        sizes = []
    if not 1 <= len(sizes) <= 3 or min(sizes) < 1:
        raise ValueError(f"--mesh={text!r} must be a shape of positive sizes such as 4x4 or 4x4x4")
    return TpuMesh(chip, **dict(zip("XYZ", sizes)))


def parse_sizes(text: str) -> dict[str, int]:
    """Parse 'I=1024,J=4096,K=8192' into {'I': 1024, 'J': 4096, 'K': 8192}."""
    sizes = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        name, _, value = part.partition("=")
        if not name or not value.isdigit() or int(value) < 1:
            raise ValueError(f"--sizes={text!r} must look like I=1024,J=4096,K=8192 (positive sizes)")
        sizes[name.strip()] = int(value)
    return sizes


# --- argument types: each refuses a bad value in one line that argparse prefixes with the option's name ---------


def _count(text: str) -> int:
    """A whole number ≥ 1 ('8' or '8.0'; not '2.5', '-1' or 'inf')."""
    try:
        return check_int("value", float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1") from None


def _size(text: str) -> float:
    """A positive size such as '32MiB', '1.5e9' or '4Mi' (finite, at most units.LARGEST)."""
    try:
        value = parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).replace("size=", "", 1)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size")
    return value


def _name(allowed: Sequence[str]) -> Callable[[str], str]:
    """One of `allowed`, with the closest names suggested for a misspelling."""
    def name(text: str) -> str:
        try:
            return check_choice("value", text, allowed)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err).replace("value=", "", 1)) from None
    return name


class _Parser(argparse.ArgumentParser):
    """argparse with whole option names only and a one-line error (exit status 2) instead of a usage block."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def _is_gpu(chip: str | None) -> bool:
    return chip is not None and get_chip(chip).kind == "gpu"


def _default_cluster(chip: str, gpus: int) -> tuple[GpuCluster, str]:
    """The usual system of GPU `chip` holding `gpus` GPUs in whole nodes, and a line saying it was built."""
    node = GpuCluster(chip, gpus=1).gpus_per_node
    cluster = GpuCluster(chip, gpus=max(node, -(-gpus // node) * node))
    return cluster, f"(--chip {chip} is a GPU: using its default cluster, {cluster})"


def _collective(args: argparse.Namespace) -> str:
    note = ""
    if args.cluster or _is_gpu(args.chip):
        if args.cluster and args.chip:
            raise ValueError("give --chip or --cluster, not both")
        if args.mesh:
            raise ValueError(f"--mesh={args.mesh!r} shapes a TPU slice and {args.chip or args.cluster} is not a TPU; "
                             "give a GPU cluster --gpus instead")
        if args.cluster:
            mesh = get_cluster(args.cluster, args.gpus, args.sharp)
        else:
            mesh, note = _default_cluster(args.chip, args.gpus or 1)
            mesh = GpuCluster(mesh.chip, gpus=mesh.gpus, sharp=True) if args.sharp else mesh
            mesh = mesh.subset(args.gpus) if args.gpus else mesh
        if args.also_sharded is not None and not args.also_sharded.isdigit():
            raise ValueError(f"--also-sharded={args.also_sharded!r}: on a GPU cluster give the size of the inner "
                             "axis, a whole number")
        also = int(args.also_sharded) if args.also_sharded else ()
    else:
        if not (args.chip and args.mesh):
            raise ValueError("give --chip and --mesh for a TPU slice, or --cluster (or a GPU --chip) for GPUs")
        ignored = [flag for flag, given in (("--gpus", args.gpus is not None), ("--sharp", args.sharp)) if given]
        if ignored:
            verb = "apply" if len(ignored) > 1 else "applies"
            raise ValueError(f"{' and '.join(ignored)} {verb} to a GPU cluster, not to the TPU slice "
                             f"--chip {args.chip} --mesh {args.mesh}")
        if args.also_sharded == "":
            raise ValueError("--also-sharded='' names no axis; give axes such as Y, or leave the option out")
        mesh, also = parse_mesh(args.chip, args.mesh), args.also_sharded or ()
    if args.top_k is not None and args.kind != "all_to_all":
        raise ValueError(f"--top-k applies to all_to_all only, not to {args.kind}")
    est = collective(args.kind, mesh, args.axes, args.bytes, also, args.top_k)
    return "\n".join([note] * bool(note) + [str(est)] + [f"  {k:<15} {v}" for k, v in est.terms])


def _shard(args: argparse.Namespace) -> str:
    plan = sharded_matmul(args.expr, parse_mesh(args.chip, args.mesh), args.dtype, **parse_sizes(args.sizes))
    return f"{plan}\n\n{plan.table()}"


def _plan(args: argparse.Namespace) -> str:
    if bool(args.chip) == bool(args.cluster):
        raise ValueError("give either --chip (a TPU, or a GPU for its default cluster) or --cluster (a GPU system "
                         "such as h100-superpod)")
    note = ""
    if args.cluster:
        hardware = get_cluster(args.cluster, max(args.chips, get_cluster(args.cluster).gpus))
    elif _is_gpu(args.chip):
        hardware, note = _default_cluster(args.chip, args.chips)
    else:
        hardware = args.chip
    result = plan(args.model, hardware, args.chips, args.batch, seq_len=args.seq)
    memory = f"memory per chip: {feasibility(result.memory_per_chip, result.chip.hbm_bytes)}"
    return "\n".join([note] * bool(note) + [str(result), memory, "", str(result.candidates)])


def _serve(args: argparse.Namespace) -> str:
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
             f"decode step         {fmt_time(step.time)} ({step.bound}-bound)", f"tokens/s per chip   {rate:.4g}",
             f"memory per chip     {step.summary()['memory/chip']}"]
    try:
        lines.append(f"$ per M tokens      {inference.cost_per_million_tokens(args.chip, rate):.3g}"
                     f" (prices of {inference.prices()['date']})")
    except KeyError:
        lines.append("$ per M tokens      (no price listed for this chip)")
    return "\n".join(lines)


def _grade(args: argparse.Namespace) -> str:
    table = grade(Path(args.submissions), Path(args.out), timeout=args.timeout, jobs=args.jobs,
                  sandboxed=not args.no_sandbox, force=args.force)
    return f"{table}\n\nwrote {args.out} and feedback/ beside it"


def _exercises(args: argparse.Namespace) -> str:
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
    runtime.setup()
    sweep = bench.matmul_sweep(bench.sweep_shapes(), dtype=args.dtype)
    return str(sweep)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scalebook", description="Calculators from the scalebook textbook.")
    sub = parser.add_subparsers(dest="command", required=True)
    chips = sub.add_parser("chips", help="table of accelerator specs")
    chips.add_argument("--vendor", help="google or nvidia")
    chips.set_defaults(run=_chips)
    dtypes = sorted(DTYPE_BYTES)
    roof = sub.add_parser("roofline", help="roofline estimate of one matmul X[B,D] @ W[D,F]")
    roof.add_argument("--chip", required=True, help="chip name, e.g. v5e, h100 (see `scalebook chips`)")
    roof.add_argument("--shape", required=True, help="B,D,F e.g. 1024,8192,28672")
    roof.add_argument("--dtype", default="bf16", type=_name(dtypes), metavar="DTYPE", help="dtype of all arrays")
    roof.add_argument("--weight-dtype", default=None, type=_name(dtypes), metavar="DTYPE", help="dtype of W only")
    roof.set_defaults(run=_roofline)
    coll = sub.add_parser("collective", help="time of a collective on a TPU slice or a GPU cluster")
    coll.add_argument("kind", type=_name(KINDS), help=f"one of {', '.join(KINDS)}")
    coll.add_argument("--chip", default=None, help="a TPU (with --mesh), or a GPU for its default cluster")
    coll.add_argument("--mesh", default=None, help="slice shape, e.g. 4x4 or 4x4x4")
    coll.add_argument("--cluster", default=None, type=_name(list(PRESETS)), metavar="CLUSTER",
                      help=f"a GPU system instead: {', '.join(PRESETS)}")
    coll.add_argument("--gpus", type=_count, default=None, help="GPUs of the cluster taking part (default: all)")
    coll.add_argument("--sharp", action="store_true", help="the switches reduce in the network (SHARP)")
    coll.add_argument("--axes", default=None, help="mesh axes taking part, e.g. X or XY; 'node' on a cluster")
    coll.add_argument("--bytes", required=True, type=_size, help="whole array size, e.g. 32MiB or 1.5e9")
    coll.add_argument("--also-sharded", default=None,
                      help="axes the array stays sharded over, e.g. Y (on a cluster: the inner axis size)")
    coll.add_argument("--top-k", type=_count, default=None, help="all_to_all only: ragged MoE dispatch to k experts")
    coll.set_defaults(run=_collective)
    shard = sub.add_parser("shard", help="plan a sharded matmul, e.g. 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'")
    shard.add_argument("expr")
    shard.add_argument("--chip", required=True, help="a TPU, e.g. v5p")
    shard.add_argument("--mesh", required=True, help="slice shape, e.g. 4x4x4")
    shard.add_argument("--sizes", required=True, help="dimension sizes, e.g. I=1024,J=4096,K=8192")
    shard.add_argument("--dtype", default="bf16", type=_name(dtypes), metavar="DTYPE")
    shard.set_defaults(run=_shard)
    train = sub.add_parser("plan", help="choose a training layout (DP, FSDP, TP, FSDP x TP, DCN; PP on GPUs)")
    train.add_argument("--model", required=True, help="a preset, e.g. llama3-70b (see scalebook.models)")
    train.add_argument("--chip", default=None, help="a TPU, e.g. v5p, or a GPU for its default cluster")
    train.add_argument("--cluster", default=None, type=_name(list(PRESETS)), metavar="CLUSTER",
                       help=f"or a GPU system: {', '.join(PRESETS)}")
    train.add_argument("--chips", required=True, type=_count, help="number of chips (GPUs), e.g. 8960")
    train.add_argument("--batch", required=True, type=_size,
                       help="global batch in tokens, e.g. 4Mi (= 4·2**20) or 4194304")
    train.add_argument("--seq", type=_count, default=4096, help="sequence length in tokens (default 4096)")
    train.set_defaults(run=_plan)
    serve = sub.add_parser("serve", help="smallest topology, max batch, step time and cost of serving a model")
    serve.add_argument("--model", required=True, help="a preset, e.g. llama3-70b")
    serve.add_argument("--chip", required=True, help="e.g. v5e")
    serve.add_argument("--context", type=_count, default=8192, help="tokens per sequence (default 8192)")
    serve.add_argument("--dtype", default="bf16", type=_name(["bf16", "int8", "int4", "fp8"]), metavar="DTYPE",
                       help="weights and KV cache dtype: bf16, int8, int4 or fp8")
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


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, of the parser and its subcommands, that takes a value."""
    out: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                out |= _value_options(child)
        elif action.option_strings and action.nargs is None:
            out.update(action.option_strings)
    return out


def _join_negative_values(argv: list[str], options: set[str]) -> list[str]:
    """'--bytes -1e9' -> '--bytes=-1e9': argparse then reads the negative value, which the option's type refuses
    by name, rather than taking it for an option and saying 'expected one argument'."""
    out: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token in options:
            value = next(tokens, None)
            if value is not None and value.startswith("-") and not value.startswith("--"):
                out.append(f"{token}={value}")
                continue
            out.extend([token] if value is None else [token, value])
            continue
        out.append(token)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (2 with a one-line message on bad input, never a traceback)."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(_join_negative_values(argv, _value_options(parser)))
    except SystemExit as done:  # argparse printed its one-line error (status 2) or the help (status 0)
        return done.code if isinstance(done.code, int) else 2
    try:
        print(args.run(args))
    except (ValueError, KeyError, TypeError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"scalebook {args.command}: error: {' '.join(str(message).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
