"""The `scalebook` command: the book's calculators from a terminal.

    scalebook chips [--vendor amd|google|nvidia]
    scalebook roofline --chip v5e --shape 1024,8192,28672 [--dtype bf16] [--weight-dtype int8]
    scalebook collective all_gather --chip v5e --mesh 4x4 --axes X --bytes 32MiB [--also-sharded Y]
    scalebook collective all_reduce --cluster h100-superpod --gpus 256 --bytes 1GiB [--sharp] [--top-k K]
    scalebook shard "A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]" --chip v5p --mesh 4x4x4 --sizes I=1024,J=4096,K=8192
    scalebook plan --model llama3-70b --chip v5p --chips 8960 --batch 4Mi [--seq 4096]
    scalebook plan llama3-70b h100 256 --tokens 4Mi --seq 8192 --efficiency calibrated [--fsdp | --no-fsdp]
                   [--recompute none|selective|full] [--microbatch 8Ki] [--tp 8] [--pp 4] [--cp 1] [--ep 1]
                   [--framework megatron|torchtitan|composer|maxtext|deepspeed|generic]
    scalebook plan --model llama3-70b --cluster h100-superpod --chips 4096 --batch 4Mi
    scalebook plan --model llama3-70b --chip h100 --chips 1000 --batch 4Mi   # a GPU: its default cluster
    scalebook serve --model llama3-70b --chip v5e --context 8192 --dtype int8
    scalebook serve llama3-70b h100 --chips 8 --batch 1 --context 8192 [--efficiency calibrated]
    scalebook grade SUBMISSIONS_DIR --out gradebook.csv [--timeout 120] [--jobs 2] [--force] [--no-sandbox]
                    [--secret-file course.key] [--hint-cost 0.25] [--format csv|gradescope|lms]
    scalebook course keys --secret-file course.key alice bob       # each student's key for sb.setup(key=...)
    scalebook course gradescope-zip 01_rooflines --out autograder.zip [--secret-file course.key]
    scalebook exercises                       # regenerate exercises/ (and the .ipynb twins) from solutions/
    scalebook bench [--dtype fp32]            # calibrate this device and sweep matmuls (needs JAX)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import inference
from ..book.notebooks import sync
from ..collectives import KINDS, collective
from ..estimate import feasibility
from ..hardware.chips import EFFICIENCY_MODES, Chip, chip_names, get_chip, list_chips
from ..hardware.gpu import PRESETS, GpuCluster, get_cluster
from ..hardware.topology import TpuMesh
from ..lab import bench, runtime
from ..models import get_model
from ..roofline import critical_batch, matmul
from ..sharding import sharded_matmul
from ..tables import Table
from ..training.footprint import RECOMPUTE
from ..training.frameworks import DEFAULT_FRAMEWORK, framework_names
from ..training.planner import plan
from ..units import DTYPE_BYTES, JAX_DTYPES, check_int, fmt_rate, fmt_time
from .arguments import (
    Parser,
    count,
    in_option_names,
    join_negative_values,
    one_of,
    size,
    sub_parser,
    value_options,
)
from .teacher import add_commands as course_commands

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


def _is_gpu(chip: str | None) -> bool:
    return chip is not None and get_chip(chip).kind == "gpu"


def _node_size(chip: Chip | str) -> int:
    """GPUs in one NVLink node of GPU `chip`'s usual system (8 in a DGX, 72 in an NVL72 rack)."""
    return GpuCluster(chip, gpus=1).gpus_per_node


def _default_cluster(chip: str, gpus: int) -> tuple[GpuCluster, str]:
    """The usual system of GPU `chip` holding `gpus` GPUs in whole nodes, and a line saying it was built."""
    node = _node_size(chip)
    cluster = GpuCluster(chip, gpus=max(node, -(-gpus // node) * node))
    return cluster, f"(--chip {chip} is a GPU: using its default cluster, {cluster})"


def _unit(chip: Chip) -> str:
    """What one device of `chip` is called in output: a GPU or a chip."""
    return "GPU" if chip.kind == "gpu" else "chip"


def _devices(n: int, chip: Chip) -> str:
    """'8 GPUs in 1 NVLink node' on GPUs, '8 chips' on TPUs ('1 GPU', '1 chip' for one)."""
    if chip.kind != "gpu":
        return f"{n} chip{'s' * (n != 1)}"
    node = _node_size(chip)
    nodes = -(-n // node)
    return f"{n} GPU{'s' * (n != 1)} in {nodes} NVLink node{'s' * (nodes != 1)} (of {node})"


def _gpu_words(text: str) -> str:
    """`text` speaking of GPUs where the package's output says chips (an option such as --chips stays)."""
    return re.sub(r"(?<!-)\bchip(s?)\b", r"GPU\1", text)


def _for_gpus(table: Table) -> Table:
    """The same table speaking of GPUs: its columns, its title and its text cells."""
    names = {c: _gpu_words(c) for c in table.columns}
    rows = [{names.get(k, k): _gpu_words(v) if isinstance(v, str) else v for k, v in row.items()}
            for row in table.rows]
    return Table(rows, [names[c] for c in table.columns], {names.get(k, k): f for k, f in table.formats.items()},
                 _gpu_words(table.title))


def _numbers(efficiency: str | None, chip: Chip) -> str:
    """The line saying whether a command's numbers are a bound (ideal) or calibrated."""
    if efficiency == "calibrated":
        return (f"numbers: calibrated — the {chip.name}'s published efficiencies (kernels, HBM, collectives), with "
                "the ideal bound beside them")
    return ("numbers: ideal — the book's roofline with perfect overlap: a bound (no real run is faster, and its "
            f"MFU is a ceiling); --efficiency calibrated for the {chip.name}'s published efficiencies")


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


def _positional(args: argparse.Namespace, pairs: Sequence[tuple[str, str, str]]) -> None:
    """Fill each option from its positional twin (`scalebook plan llama3-70b h100 256`); both given is an error."""
    for positional, option, flag in pairs:
        given = getattr(args, positional)
        if given is not None and getattr(args, option) is not None:
            raise ValueError(f"{flag} and the {positional.upper()} argument name the same thing; give one")
        if given is not None:
            setattr(args, option, given)
        if getattr(args, option) is None:
            raise ValueError(f"{flag} is required (or the {positional.upper()} argument)")


def _plan(args: argparse.Namespace) -> str:
    if args.hardware is not None:  # the HARDWARE argument: a GPU system's preset name or a chip name
        _positional(args, [("hardware", "cluster" if args.hardware.lower() in PRESETS else "chip", "--chip")])
    _positional(args, [("model_name", "model", "--model"), ("n_chips", "chips", "--chips")])
    if args.batch is None:
        raise ValueError("--batch (or --tokens) is required: the global batch in tokens, e.g. 4Mi")
    if bool(args.chip) == bool(args.cluster):
        raise ValueError("give either --chip (a TPU, or a GPU for its default cluster) or --cluster (a GPU system "
                         "such as h100-superpod)")
    if args.fsdp is not None and args.efficiency is None:
        raise ValueError(f"--{'' if args.fsdp else 'no-'}fsdp picks between FSDP and ZeRO-1 among published layouts: "
                         "give --efficiency ideal or calibrated too (the book's strategies try FSDP themselves)")
    note = ""
    if args.cluster:
        hardware = get_cluster(args.cluster, max(args.chips, get_cluster(args.cluster).gpus))
    elif _is_gpu(args.chip):
        hardware, note = _default_cluster(args.chip, args.chips)
    else:
        hardware = args.chip
    result = plan(args.model, hardware, args.chips, args.batch, seq_len=args.seq, efficiency=args.efficiency or "book",
                  fsdp=args.fsdp, recompute=args.recompute, microbatch_tokens=args.microbatch, tp=args.tp,
                  pp=args.pp, cp=args.cp, ep=args.ep, framework=args.framework)
    unit = _unit(result.chip)
    bound = "" if args.efficiency == "calibrated" else f"MFU {result.mfu:.1%} is a bound (ideal), not a forecast"
    memory = f"memory per {unit}: {feasibility(result.memory_per_chip, result.chip.hbm_bytes)}"
    table, head = (_for_gpus(result.candidates), _gpu_words(str(result))) if unit == "GPU" else (
        result.candidates, str(result))
    return "\n".join([note] * bool(note) + [_numbers(args.efficiency, result.chip), head] + [bound] * bool(bound)
                     + [memory, "", str(table)])


def _tp_time(t_ici: float, n: int, efficiency: str) -> str:
    """The tensor-parallel collectives' time of a decode step (s, formatted), or why there is none."""
    if n == 1:
        return "none (one device)"
    if efficiency == "ideal" and not t_ici:
        return "not counted by the ideal bound (--efficiency calibrated prices them)"
    return fmt_time(t_ici)


def _serve(args: argparse.Namespace) -> str:
    _positional(args, [("model_name", "model", "--model"), ("chip_name", "chip", "--chip")])
    model, chip, b = get_model(args.model), get_chip(args.chip), DTYPE_BYTES[args.dtype]
    unit, context = _unit(chip), args.context
    if args.chips is None:
        X, Y = inference.smallest_topology(model, chip, param_bytes=b)
        n = X * Y
        where = (f"smallest topology   {_devices(n, chip)} (weights only)" if unit == "GPU" else
                 f"smallest topology   {X}x{Y} ({n} chips, weights only)")
    else:
        n = args.chips
        where = f"{unit + 's':<20}{_devices(n, chip)} (--chips)"
    fit = inference.max_batch(model, chip, n, context, param_bytes=b, kv_bytes=b)
    if fit < 1:
        raise ValueError(f"--context={context}: no sequence of {context} tokens fits beside the weights on "
                         f"{_devices(n, chip)}; try a shorter --context, a smaller --dtype or more --chips")
    batch = fit if args.batch is None else args.batch
    if batch > fit:
        raise ValueError(f"--batch={batch}: only {fit} sequences of {context} tokens fit beside the weights on "
                         f"{_devices(n, chip)}; use a smaller --batch or --context, or more --chips")
    step = inference.decode_step(model, chip, n, batch, context, param_bytes=b, kv_bytes=b,
                                 efficiency=args.efficiency)
    first = inference.prefill(model, chip, n, context, param_bytes=b, kv_bytes=b, efficiency=args.efficiency)
    rate = step.tokens_per_second / n
    link = "ICI" if unit == "chip" else "NVLink" if n <= _node_size(chip) else "network"
    bound = link if step.bound == "ici" else step.bound
    lines = [_numbers(args.efficiency, chip), where,
             f"batch               {batch} sequence{'s' * (batch != 1)} of {context} tokens ({fit} fit)",
             f"decode step         {fmt_time(step.time)} per token ({bound}-bound)",
             f"  weights from HBM  {fmt_time(step.t_params)}", f"  KV caches         {fmt_time(step.t_kv)}",
             f"  FLOPs             {fmt_time(step.t_math)}",
             f"  TP over {link:<9} {_tp_time(step.t_ici, n, args.efficiency)}",
             f"prefill             {fmt_time(first.time)} for one {context}-token prompt (time to first token)",
             f"tokens/s per {unit:<6} {rate:.4g}",
             f"memory per {unit:<8} {feasibility(step.memory_per_chip, chip.hbm_bytes)}"]
    try:
        lines.append(f"$ per M tokens      {inference.cost_per_million_tokens(chip, rate):.3g}"
                     f" (prices of {inference.prices()['date']})")
    except KeyError:
        lines.append(f"$ per M tokens      (no price listed for the {chip.name})")
    return "\n".join(lines)


def _exercises(args: argparse.Namespace) -> str:
    changed = sync(Path.cwd())
    return "\n".join(f"updated {p.relative_to(Path.cwd())}" for p in changed) or "everything was up to date"


def _chips(args: argparse.Namespace) -> str:
    table = list_chips(vendor=args.vendor)
    rows = [{**row, "fp8 FLOP/s": get_chip(row["chip"]).fp8_flops} for row in table.rows]
    columns = list(table.columns)
    columns.insert(columns.index("int8 OP/s"), "fp8 FLOP/s")
    return str(Table(rows, columns, {**table.formats, "fp8 FLOP/s": fmt_rate}, table.title))


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


def build_parser() -> argparse.ArgumentParser:
    """Return the `scalebook` command's parser: the calculators' subcommands and the teacher's."""
    parser = Parser(prog="scalebook", description="Calculators from the scalebook textbook.")
    sub = parser.add_subparsers(dest="command", required=True)
    chips = sub.add_parser("chips", help="table of accelerator specs")
    vendors = sorted({get_chip(name).vendor for name in chip_names()})
    chips.add_argument("--vendor", type=one_of(vendors), metavar="VENDOR", help=" or ".join(vendors))
    chips.set_defaults(run=_chips)
    dtypes = sorted(DTYPE_BYTES)
    roof = sub.add_parser("roofline", help="roofline estimate of one matmul X[B,D] @ W[D,F]")
    roof.add_argument("--chip", required=True, help="chip name, e.g. v5e, h100 (see `scalebook chips`)")
    roof.add_argument("--shape", required=True, help="B,D,F e.g. 1024,8192,28672")
    roof.add_argument("--dtype", default="bf16", type=one_of(dtypes), metavar="DTYPE", help="dtype of all arrays")
    roof.add_argument("--weight-dtype", default=None, type=one_of(dtypes), metavar="DTYPE", help="dtype of W only")
    roof.set_defaults(run=_roofline)
    coll = sub.add_parser("collective", help="time of a collective on a TPU slice or a GPU cluster")
    coll.add_argument("kind", type=one_of(KINDS), help=f"one of {', '.join(KINDS)}")
    coll.add_argument("--chip", default=None, help="a TPU (with --mesh), or a GPU for its default cluster")
    coll.add_argument("--mesh", default=None, help="slice shape, e.g. 4x4 or 4x4x4")
    coll.add_argument("--cluster", default=None, type=one_of(list(PRESETS)), metavar="CLUSTER",
                      help=f"a GPU system instead: {', '.join(PRESETS)}")
    coll.add_argument("--gpus", type=count, default=None, help="GPUs of the cluster taking part (default: all)")
    coll.add_argument("--sharp", action="store_true", help="the switches reduce in the network (SHARP)")
    coll.add_argument("--axes", default=None, help="mesh axes taking part, e.g. X or XY; 'node' on a cluster")
    coll.add_argument("--bytes", required=True, type=size, help="whole array size, e.g. 32MiB or 1.5e9")
    coll.add_argument("--also-sharded", default=None,
                      help="axes the array stays sharded over, e.g. Y (on a cluster: the inner axis size)")
    coll.add_argument("--top-k", type=count, default=None, help="all_to_all only: ragged MoE dispatch to k experts")
    coll.set_defaults(run=_collective)
    shard = sub.add_parser("shard", help="plan a sharded matmul, e.g. 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'")
    shard.add_argument("expr")
    shard.add_argument("--chip", required=True, help="a TPU, e.g. v5p")
    shard.add_argument("--mesh", required=True, help="slice shape, e.g. 4x4x4")
    shard.add_argument("--sizes", required=True, help="dimension sizes, e.g. I=1024,J=4096,K=8192")
    shard.add_argument("--dtype", default="bf16", type=one_of(dtypes), metavar="DTYPE")
    shard.set_defaults(run=_shard)
    efficiency = dict(default=None, type=one_of(EFFICIENCY_MODES), metavar="EFFICIENCY")
    train = sub.add_parser("plan", help="choose a training layout (DP, FSDP, TP, PP, CP, EP; DCN between slices)")
    train.add_argument("model_name", nargs="?", metavar="MODEL", help="a preset, e.g. llama3-70b (or --model)")
    train.add_argument("hardware", nargs="?", metavar="HARDWARE",
                       help="a chip (v5p, h100) or a GPU system (h100-superpod) (or --chip / --cluster)")
    train.add_argument("n_chips", nargs="?", type=count, metavar="CHIPS", help="number of chips or GPUs")
    train.add_argument("--model", default=None, help="a preset, e.g. llama3-70b (see scalebook.models)")
    train.add_argument("--chip", default=None, help="a TPU, e.g. v5p, or a GPU for its default cluster")
    train.add_argument("--cluster", default=None, type=one_of(list(PRESETS)), metavar="CLUSTER",
                       help=f"or a GPU system: {', '.join(PRESETS)}")
    train.add_argument("--chips", default=None, type=count, help="number of chips (GPUs), e.g. 8960")
    train.add_argument("--batch", "--tokens", default=None, type=size,
                       help="global batch in tokens, e.g. 4Mi (= 4·2**20) or 4194304")
    train.add_argument("--seq", type=count, default=4096, help="sequence length in tokens (default 4096)")
    train.add_argument("--efficiency", **efficiency,
                       help="ideal or calibrated: price published layouts by `training.predict` (default: the "
                            "book's strategies, an ideal bound)")
    train.add_argument("--fsdp", default=None, action=argparse.BooleanOptionalAction,
                       help="with --efficiency: only FSDP (--fsdp) or only ZeRO-1 (--no-fsdp); default both")
    train.add_argument("--recompute", default=None, type=one_of(RECOMPUTE), metavar="RECOMPUTE",
                       help="activation recomputation: none, selective or full (default: searched)")
    train.add_argument("--microbatch", default=None, type=size,
                       help="with --efficiency: tokens per microbatch, e.g. 8Ki (default: one sequence)")
    for degree, what in (("tp", "tensor"), ("pp", "pipeline"), ("cp", "context"), ("ep", "expert")):
        train.add_argument(f"--{degree}", default=None, type=count,
                           help=f"fix the {what}-parallel degree (default: searched; cp and ep need --efficiency)")
    train.add_argument("--framework", default=DEFAULT_FRAMEWORK, type=one_of(framework_names()), metavar="FRAMEWORK",
                       help="with --efficiency calibrated: the code that runs the step, whose share of the modelled "
                            f"rate divides it: {', '.join(framework_names())} (default {DEFAULT_FRAMEWORK})")
    train.set_defaults(run=_plan)
    serve = sub.add_parser("serve", help="topology, batch, decode step, first-token time and cost of serving")
    serve.add_argument("model_name", nargs="?", metavar="MODEL", help="a preset, e.g. llama3-70b (or --model)")
    serve.add_argument("chip_name", nargs="?", metavar="CHIP", help="a chip, e.g. v5e or h100 (or --chip)")
    serve.add_argument("--model", default=None, help="a preset, e.g. llama3-70b")
    serve.add_argument("--chip", default=None, help="e.g. v5e or h100")
    serve.add_argument("--chips", type=count, default=None,
                       help="chips (GPUs) serving one replica (default: the fewest that hold the weights)")
    serve.add_argument("--batch", type=count, default=None,
                       help="sequences decoded together (default: as many as fit beside the weights)")
    serve.add_argument("--context", type=count, default=8192, help="tokens per sequence (default 8192)")
    serve.add_argument("--dtype", default="bf16", type=one_of(["bf16", "int8", "int4", "fp8"]), metavar="DTYPE",
                       help="weights and KV cache dtype: bf16, int8, int4 or fp8")
    serve.add_argument("--efficiency", **{**efficiency, "default": "ideal"},
                       help="ideal (the book's roofline bound, default) or calibrated (published efficiencies)")
    serve.set_defaults(run=_serve)
    course_commands(sub)  # grade, course keys, course gradescope-zip
    exercises = sub.add_parser("exercises", help="regenerate exercises/ from solutions/ (run in the repository)")
    exercises.set_defaults(run=_exercises)
    bench = sub.add_parser("bench", help="calibrate this device and time a matmul sweep (needs JAX)")
    bench.add_argument("--dtype", default=None, type=one_of(sorted(JAX_DTYPES)), metavar="DTYPE",
                       help="fp32 on CPU by default, bf16 on accelerators")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (2 with a one-line message on bad input, never a traceback)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(join_negative_values(argv, value_options(parser)))
    except SystemExit as done:  # argparse printed its one-line error (status 2) or the help (status 0)
        return done.code if isinstance(done.code, int) else 2
    try:
        print(args.run(args))
    except (ValueError, KeyError, TypeError, OSError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        text = in_option_names(" ".join(str(message).split()), sub_parser(parser, args.command))
        print(f"scalebook {args.command}: error: {text}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
