"""The book's sharding notation and sharded matrix multiplication plans.

Notation (How To Scale Your Model, ch. 3): `A[I_X, J_Y]` is an array whose dimension I is split over
mesh axis X and J over Y; `A[I_XY, J]` splits I over X and Y together (X major); a mesh axis that no
dimension mentions means the array is replicated along it; `C[I, K]{U_X}` holds unreduced partial sums
over X. A mesh axis may shard at most one dimension.

`sharded_matmul("A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]", mesh, I=..., J=..., K=...)` works out how to get
the requested output: which collectives to run on the inputs first (AllGather), whether the local
matmul leaves partial sums (then AllReduce or ReduceScatter), and what re-sharding the output needs;
it tries every reasonable alternative, costs each with `collectives`, and returns the cheapest as a `ShardedMatmul`.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from .collectives import collective
from .estimate import Estimate, Overlap
from .hardware.topology import TpuMesh
from .tables import Table
from .units import check_choice, check_int, check_kind, dtype_bytes, fmt_bytes, fmt_time

__all__ = ["ArraySpec", "parse_spec", "parse_expr", "local_shape", "bytes_per_device", "total_bytes", "Step",
           "ShardedMatmul", "sharded_matmul", "partition_spec", "mesh_axes"]

_ARRAY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*\[([^\]]*)\]\s*(\{[^}]*\})?\s*$")
_DIM = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(?:_([A-Z]+))?$")


@dataclass(frozen=True)
class ArraySpec:
    """A sharded array: its name, its dimensions with the mesh axes each is split over, unreduced axes."""

    name: str
    dims: tuple[tuple[str, tuple[str, ...]], ...]
    unreduced: tuple[str, ...] = ()

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.dims)

    def axes_of(self, dim: str) -> tuple[str, ...]:
        """Mesh axes that dimension `dim` is split over (empty when it is whole on every device)."""
        return dict(self.dims)[check_choice("dim", dim, self.dim_names)]

    @property
    def used_axes(self) -> tuple[str, ...]:
        """Every mesh axis the array is split over, in dimension order."""
        return tuple(a for _, axes in self.dims for a in axes)

    def with_axes(self, dim: str, axes: tuple[str, ...]) -> ArraySpec:
        """Return this spec with dimension `dim` split over mesh `axes` instead (() = whole on every device)."""
        dim = check_choice("dim", dim, self.dim_names)
        axes = tuple(check_kind("axes", axes, "names"))
        moved = replace(self, dims=tuple((d, axes if d == dim else a) for d, a in self.dims))
        try:
            return parse_spec(str(moved))
        except ValueError as err:
            raise ValueError(f"axes={axes!r} for {dim}: {err}") from None

    def __str__(self) -> str:
        body = ", ".join(f"{d}_{''.join(a)}" if a else d for d, a in self.dims)
        unreduced = "{U_" + "".join(self.unreduced) + "}" if self.unreduced else ""
        return f"{self.name}[{body}]{unreduced}"


def parse_spec(text: str) -> ArraySpec:
    """Parse 'A[I_X, J_Y]', 'A[I_XY, J]' or 'C[I, K]{U_X}' into an `ArraySpec`; raise `ValueError` if malformed."""
    match = _ARRAY.match(str(text))
    if not match:
        raise ValueError(f"spec={text!r} must look like 'A[I_X, J_Y]' or 'C[I, K]{{U_X}}'")
    name, body, unreduced_text = match.groups()
    dims = []
    for part in (p.strip() for p in body.split(",")):
        m = _DIM.match(part)
        if not m:
            raise ValueError(f"spec={text!r}: dimension {part!r} must be a name with optional _AXES, e.g. I_XY")
        dims.append((m.group(1), tuple(m.group(2) or "")))
    unreduced: tuple[str, ...] = ()
    if unreduced_text:
        m = re.fullmatch(r"\{\s*U_([A-Z]+)\s*\}", unreduced_text)
        if not m:
            raise ValueError(f"spec={text!r}: the unreduced part must look like {{U_X}} or {{U_XY}}")
        unreduced = tuple(m.group(1))
    names = [d for d, _ in dims]
    if len(set(names)) != len(names):
        raise ValueError(f"spec={text!r} names a dimension twice")
    axes = [a for _, ax in dims for a in ax] + list(unreduced)
    twice = sorted({a for a in axes if axes.count(a) > 1})
    if twice:
        raise ValueError(f"spec={text!r} uses mesh axis {', '.join(twice)} twice; an axis can shard one dimension")
    return ArraySpec(name, tuple(dims), unreduced)


def _as_spec(spec: ArraySpec | str) -> ArraySpec:
    return spec if isinstance(spec, ArraySpec) else parse_spec(spec)


MeshLike = TpuMesh | Mapping[str, int]


def mesh_axes(mesh: MeshLike) -> dict[str, int]:
    """Return {axis: size} of a `TpuMesh` or of a plain mapping such as {"X": 4, "Y": 2}."""
    if not isinstance(mesh, (TpuMesh, Mapping)):
        raise ValueError(f"mesh={mesh!r} must be a TpuMesh or a mapping of axis names to sizes")
    axes = dict(mesh.axes if isinstance(mesh, TpuMesh) else mesh)
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in axes.values()):
        raise ValueError(f"mesh={mesh!r} must map axis names to positive sizes")
    return axes


MAX_DIM = 2**32  # the largest array dimension a spec may give: products of two stay far below units.LARGEST bytes


def _check_sizes(sizes: object) -> Mapping[str, int]:
    if not isinstance(sizes, Mapping):
        raise ValueError(f"sizes={sizes!r} must map dimension names to sizes, e.g. {{'I': 1024, 'J': 8192}}")
    for dim, n in sizes.items():
        check_int(f"sizes[{dim!r}]", n, 1, MAX_DIM)
    return sizes


def _check_axes(spec: ArraySpec, axes: Mapping[str, int]) -> None:
    unknown = sorted({a for a in (*spec.used_axes, *spec.unreduced) if a not in axes})
    if unknown:
        raise ValueError(f"{spec} uses mesh axes {unknown} that the mesh does not have (axes {list(axes)})")


def local_shape(spec: ArraySpec | str, mesh: MeshLike, sizes: Mapping[str, int]) -> dict[str, int]:
    """Return the shape each device holds: every dimension divided by the sizes of its mesh axes.

    `mesh` is a `TpuMesh` or a plain {axis: size} mapping.
    """
    spec = _as_spec(spec)
    axes_of = mesh_axes(mesh)
    sizes = _check_sizes(sizes)
    _check_axes(spec, axes_of)
    shape = {}
    for dim, axes in spec.dims:
        if dim not in sizes:
            raise ValueError(f"sizes has no size for dimension {dim!r} of {spec}")
        n, parts = sizes[dim], math.prod(axes_of[a] for a in axes)
        if n % parts:
            raise ValueError(f"sizes[{dim!r}]: dimension {dim}={n!r} of {spec} must be a positive multiple of {parts} "
                             f"(the size of mesh axes {''.join(axes)})")
        shape[dim] = n // parts
    return shape


def bytes_per_device(spec: ArraySpec | str, mesh: MeshLike, sizes: Mapping[str, int], dtype: str = "bf16") -> float:
    """Return the bytes of the shard each device holds."""
    return math.prod(local_shape(spec, mesh, sizes).values()) * dtype_bytes(dtype)


def total_bytes(spec: ArraySpec | str, mesh: MeshLike, sizes: Mapping[str, int], dtype: str = "bf16") -> float:
    """Return the bytes held across the whole mesh (one shard per chip, replicas counted)."""
    return bytes_per_device(spec, mesh, sizes, dtype) * math.prod(mesh_axes(mesh).values())


def partition_spec(spec: ArraySpec | str) -> tuple[str | tuple[str, ...] | None, ...]:
    """Return the JAX PartitionSpec entries of a spec: 'A[I_XY, J]' -> (('X', 'Y'), None)."""
    spec = _as_spec(spec)
    return tuple(None if not a else a[0] if len(a) == 1 else a for _, a in spec.dims)


class Step(NamedTuple):
    """One collective of a plan: kind, the mesh axes it runs over, the array bytes, its cost, and why."""

    kind: str
    axes: tuple[str, ...]
    nbytes: float
    estimate: Estimate
    what: str


@dataclass(frozen=True)
class ShardedMatmul(Overlap):
    """How to compute a sharded matmul: collectives before and after a local matmul, and what it costs (the old
    name `sb.Plan` warns until release 0.3: a training plan is `sb.training.plan`'s `TrainingPlan`)."""

    expr: str
    case: int
    case_text: str
    strategy: str
    collectives: tuple[Step, ...]
    local: Estimate
    alternatives: tuple[tuple[str, float], ...] = field(default=())

    @property
    def t_math(self) -> float:
        """Seconds of local matmul on each chip."""
        return self.local.t_math

    @property
    def t_comms(self) -> float:
        """Seconds of communication, the collectives one after another (their latency included)."""
        return sum(s.estimate.time for s in self.collectives)

    t_link = t_comms  # what `Overlap` combines with t_math: time = max (the book's), upper = sum

    @property
    def kinds(self) -> list[str]:
        """Sorted kinds of the collectives the plan runs (to compare with what XLA emits)."""
        return sorted({s.kind for s in self.collectives})

    def table(self) -> Table:
        """The alternatives that were considered, cheapest first."""
        rows = [{"strategy": name, "time": t, "chosen": "✓" if name == self.strategy else ""}
                for name, t in self.alternatives]
        return Table(rows, formats={"time": fmt_time}, title=f"alternatives for {self.expr}")

    def __str__(self) -> str:
        steps = "; ".join(f"{s.kind}_{''.join(s.axes)} of {fmt_bytes(s.nbytes)} ({fmt_time(s.estimate.time)})"
                          for s in self.collectives) or "no communication"
        return (f"{self.expr}: case {self.case} ({self.case_text}); {self.strategy}: {steps}; "
                f"matmul {fmt_time(self.t_math)}; time {fmt_time(self.time)}")

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(s.kind)}</td><td>{''.join(s.axes)}</td><td>{fmt_bytes(s.nbytes)}</td>"
            f"<td>{fmt_time(s.estimate.time)} ({s.estimate.bound})</td><td>{html.escape(s.what)}</td></tr>"
            for s in self.collectives) or "<tr><td colspan=5>no communication</td></tr>"
        return (f"<p><b>{html.escape(self.expr)}</b> — case {self.case}: {html.escape(self.case_text)}<br/>"
                f"chosen: {html.escape(self.strategy)}; local matmul {fmt_time(self.t_math)}, "
                f"communication {fmt_time(self.t_comms)}, time {fmt_time(self.time)} "
                f"(upper {fmt_time(self.upper)})</p><table><thead><tr><th>collective</th><th>axes</th>"
                f"<th>array</th><th>time</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
                + self.table()._repr_html_())


def parse_expr(expr: str) -> tuple[ArraySpec, ArraySpec, ArraySpec]:
    expr = check_kind("expr", expr, "text")
    parts = [p.strip() for p in re.split(r"@|->", expr)]
    if len(parts) != 3:
        raise ValueError(f"expr={expr!r} must look like 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'")
    A, B, C = (parse_spec(p) for p in parts)
    shared = set(A.dim_names) & set(B.dim_names)
    if len(A.dims) != 2 or len(B.dims) != 2 or len(shared) != 1:
        raise ValueError(f"expr={expr!r}: A and B must be 2-D and share exactly one (contracting) dimension")
    (J,) = shared
    free = [d for d in A.dim_names if d != J] + [d for d in B.dim_names if d != J]
    if sorted(C.dim_names) != sorted(free):
        raise ValueError(f"expr={expr!r}: the output must have the free dimensions {free}, got {list(C.dim_names)}")
    if A.unreduced or B.unreduced:
        raise ValueError(f"expr={expr!r}: inputs cannot hold unreduced sums")
    return A, B, C


def _classify(A: ArraySpec, B: ArraySpec, J: str) -> tuple[int, str]:
    a_free = {x for d, ax in A.dims if d != J for x in ax}
    b_free = {x for d, ax in B.dims if d != J for x in ax}
    aj, bj = A.axes_of(J), B.axes_of(J)
    if a_free & b_free:
        return 4, (f"both inputs split a non-contracting dimension over {''.join(sorted(a_free & b_free))}: "
                   "one must be gathered")
    if not aj and not bj:
        return 1, "the contracting dimension is whole on every device: local matmul, no communication needed"
    if aj and bj and aj == bj:
        return 3, (f"both inputs split the contracting dimension over {''.join(aj)}: the local matmul leaves "
                   "partial sums to reduce")
    return 2, "one input splits the contracting dimension: gather it first, or multiply locally and reduce"


def _gather(spec: ArraySpec, dim: str, mesh: TpuMesh, sizes: Mapping[str, int], dtype: str,
            what: str) -> tuple[ArraySpec, Step | None]:
    axes = spec.axes_of(dim)
    if not axes:
        return spec, None
    others = tuple(a for a in spec.used_axes if a not in axes)
    V = math.prod(sizes[d] for d in spec.dim_names) * dtype_bytes(dtype)
    est = collective("all_gather", mesh, axes, V, others)
    return spec.with_axes(dim, ()), Step("all_gather", axes, V, est, what)


def _candidates(A: ArraySpec, B: ArraySpec, J: str) -> list[tuple[str, tuple[bool, bool, bool, bool]]]:
    """Ways to make the operands compatible: for each input, whether to gather its contracting and free dim."""
    options = []
    for gaj, gaf, gbj, gbf in itertools.product((False, True), repeat=4):
        a_j = () if gaj else A.axes_of(J)
        b_j = () if gbj else B.axes_of(J)
        a_free = () if gaf else next(ax for d, ax in A.dims if d != J)
        b_free = () if gbf else next(ax for d, ax in B.dims if d != J)
        if a_j and b_j and a_j != b_j:
            continue  # the two halves of the contraction would not line up
        reduce_axes = a_j or b_j
        if set(a_free) & set(b_free) or set(reduce_axes) & (set(a_free) | set(b_free)):
            continue  # a mesh axis would shard two dimensions of the output
        labels = (f"{A.name}'s contracting dim", f"{A.name}'s free dim", f"{B.name}'s contracting dim",
                  f"{B.name}'s free dim")
        gathered = [n for n, g in zip(labels, (gaj, gaf, gbj, gbf)) if g]
        name = ("gather " + ", ".join(gathered) if gathered else "no gather") + (
            f", multiply locally → partial sums over {''.join(reduce_axes)}" if reduce_axes else ", multiply locally")
        options.append((name, (gaj, gaf, gbj, gbf)))
    return options


def _finish(result: ArraySpec, target: ArraySpec, mesh: TpuMesh, sizes: Mapping[str, int],
            dtype: str) -> list[Step]:
    """Collectives that turn the local result's sharding into the requested output's: the cheaper of
    all-reducing the partial sums the output does not split, or reduce-scattering every partial sum at once
    (more axes, more bandwidth) and gathering back what the output keeps whole."""
    options = [_finish_with(result, target, mesh, sizes, dtype, scatter_all) for scatter_all in (False, True)]
    return min(options, key=lambda steps: sum(s.estimate.time for s in steps))


def _finish_with(result: ArraySpec, target: ArraySpec, mesh: TpuMesh, sizes: Mapping[str, int], dtype: str,
                 scatter_all: bool) -> list[Step]:
    steps: list[Step] = []
    V = math.prod(sizes[d] for d in target.dim_names) * dtype_bytes(dtype)
    target_of = {a: d for d, axes in target.dims for a in axes}
    current = dict(result.dims)
    scatter = tuple(a for a in result.unreduced if a in target_of)
    reduce = tuple(a for a in result.unreduced if a not in scatter)
    if scatter_all and reduce:
        spare = target_of[scatter[0]] if scatter else target.dim_names[0]
        scatter_to = {**target_of, **dict.fromkeys(reduce, spare)}
        scatter, reduce = result.unreduced, ()
    else:
        scatter_to = target_of
    if reduce:
        others = tuple(a for a in result.used_axes)
        steps.append(Step("all_reduce", reduce, V, collective("all_reduce", mesh, reduce, V, others),
                          "sum the partial results on every device"))
    if scatter:
        others = tuple(a for a in result.used_axes)
        steps.append(Step("reduce_scatter", scatter, V, collective("reduce_scatter", mesh, scatter, V, others),
                          "sum the partial results, each device keeping the slice of the sharded output"))
        for a in scatter:
            current[scatter_to[a]] = (*current[scatter_to[a]], a)
    moving = [(d, a) for d, axes in current.items() for a in axes if target_of.get(a) not in (None, d)]
    if moving:
        axes = tuple(a for _, a in moving)
        others = tuple(a for ax in current.values() for a in ax if a not in axes)
        steps.append(Step("all_to_all", axes, V, collective("all_to_all", mesh, axes, V, others),
                          "move the split from one dimension to another"))
        for d, a in moving:
            current[d] = tuple(x for x in current[d] if x != a)
            current[target_of[a]] = (*current[target_of[a]], a)
    extra = tuple(a for d, axes in current.items() for a in axes if a not in dict(target.dims)[d])
    if extra:
        others = tuple(a for ax in current.values() for a in ax if a not in extra)
        steps.append(Step("all_gather", extra, V, collective("all_gather", mesh, extra, V, others),
                          "gather the output where it must be whole"))
    return steps  # axes the target adds beyond these are a free local slice


def _slice_for_output(a: ArraySpec, b: ArraySpec, C: ArraySpec, J: str, I_dim: str,
                      K_dim: str) -> tuple[ArraySpec, ArraySpec]:
    """Slice a replicated input for free where the output wants its free dimension split over unused axes.

    A device already holds every row of a replicated A, so taking its own block of I costs no communication
    and divides the matmul's work (likewise K of B).
    """
    for dim, which in ((I_dim, "a"), (K_dim, "b")):
        spec = a if which == "a" else b
        want = C.axes_of(dim)
        busy = set(a.used_axes) | set(b.used_axes)
        if want and not spec.axes_of(dim) and not busy & set(want):
            spec = spec.with_axes(dim, want)
            a, b = (spec, b) if which == "a" else (a, spec)
    return a, b


def sharded_matmul(expr: str, mesh: TpuMesh, dtype: str = "bf16", **sizes: int) -> ShardedMatmul:
    """Return the cheapest `ShardedMatmul` for a sharded matmul such as 'A[I_X, J] @ B[J, K_Y] -> C[I_X, K_Y]'.

    `sizes` gives every dimension (I=..., J=..., K=...), `dtype` the element type of all three arrays.
    The plan's `alternatives` lists every strategy considered with its lower-bound time.
    """
    A, B, C = parse_expr(expr)
    if not isinstance(mesh, TpuMesh):
        raise ValueError(f"mesh={mesh!r} must be a TpuMesh, e.g. TpuMesh('v5e', X=4, Y=4)")
    dtype = check_kind("dtype", dtype, "dtype")
    for dim, n in sizes.items():
        check_int(dim, n, 1, MAX_DIM)
    unused = sorted(set(sizes) - set(A.dim_names) - set(B.dim_names))
    if unused:
        raise ValueError(f"{unused[0]}={sizes[unused[0]]!r} sizes a dimension that expr={expr!r} does not have; "
                         f"its dimensions: {sorted(set(A.dim_names) | set(B.dim_names))}")
    for spec in (A, B, C):
        local_shape(spec, mesh, sizes)
    (J,) = set(A.dim_names) & set(B.dim_names)
    case, case_text = _classify(A, B, J)
    I_dim = next(d for d in A.dim_names if d != J)
    K_dim = next(d for d in B.dim_names if d != J)
    results = []
    for name, (gaj, gaf, gbj, gbf) in _candidates(A, B, J):
        a, b, steps = A, B, []
        for flag, dim, which, label in ((gaj, J, "a", "A"), (gaf, I_dim, "a", "A"), (gbj, J, "b", "B"),
                                        (gbf, K_dim, "b", "B")):
            if flag:
                spec = a if which == "a" else b
                new, step = _gather(spec, dim, mesh, sizes, dtype, f"gather {label}'s {dim} before the matmul")
                if step is None:
                    break
                steps.append(step)
                a, b = (new, b) if which == "a" else (a, new)
        else:
            a, b = _slice_for_output(a, b, C, J, I_dim, K_dim)
            reduce_axes = a.axes_of(J) or b.axes_of(J)
            result = ArraySpec(C.name, ((I_dim, a.axes_of(I_dim)), (K_dim, b.axes_of(K_dim))), reduce_axes)
            result = replace(result, dims=tuple((d, dict(result.dims)[d]) for d in C.dim_names))
            steps += _finish(result, C, mesh, sizes, dtype)
            flops = 2 * sizes[I_dim] * sizes[J] * sizes[K_dim] / (
                mesh.size(reduce_axes) if reduce_axes else 1) / max(1, math.prod(
                    mesh.axes[x] for x in (*a.axes_of(I_dim), *b.axes_of(K_dim))))
            local = Estimate(flops, 0.0, flops / mesh.chip.peak_flops(dtype), 0.0, label="local matmul")
            plan = ShardedMatmul(expr, case, case_text, name, tuple(steps), local)
            results.append(plan)
    results.sort(key=lambda p: (p.time, len(p.collectives)))
    alternatives = tuple((p.strategy, p.time) for p in results)
    return replace(results[0], alternatives=alternatives)
