"""Ring collectives step by step: which device holds which block of a sharded array, and, for each of the four
collectives on a ring (or a line) of devices, what every device holds after each step and which link carries what.

This is the model behind the book's ring pictures (How To Scale Your Model, ch. 3): counting the pieces that cross
the busiest link gives the bandwidth term that `collectives` prices (1/2 of the array V on a bidirectional ring,
(N−1)/N on a one-way one), and `overlapped_ring_time` is the clock of a ring that hides its sends under a matmul,
block by block (`overlap.CollectiveMatmul`). Plain Python: the figures (`plots.sharding`) and the explorers
(`widgets.sharding`) draw what these functions return.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .hardware.topology import TpuMesh
from .sharding import ArraySpec, parse_spec
from .units import checks, is_a

__all__ = ["RING_KINDS", "axis_sizes", "device_blocks", "Piece", "RingStep", "ring_schedule",
           "busiest_link_pieces", "busiest_link_share", "overlapped_ring_time", "torus_schedule"]

RING_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all")
Coord = tuple[int, ...]


@checks(mesh=is_a(TpuMesh, dict))
def axis_sizes(mesh: TpuMesh | Mapping[str, int]) -> dict[str, int]:
    """Return the mesh's axis sizes, e.g. {'X': 4, 'Y': 2}; raise `ValueError` naming `mesh` if it has none."""
    sizes = dict(mesh.axes if isinstance(mesh, TpuMesh) else mesh)
    if not sizes or any(not isinstance(n, int) or n < 1 for n in sizes.values()):
        raise ValueError(f"mesh={mesh!r} must be a TpuMesh or map axis names to positive sizes, e.g. {{'X': 4}}")
    return sizes


@checks(mesh=is_a(TpuMesh, dict))
def device_blocks(spec: ArraySpec | str, mesh: TpuMesh | Mapping[str, int]) -> dict[tuple[int, ...], list[Coord]]:
    """Return, for each block of the array (its index along every dimension), the device coordinates holding it.

    A dimension split over axes 'XY' has |X|·|Y| blocks, X the major axis; a mesh axis the spec does not
    mention replicates the array, so several devices hold the same block.
    """
    spec = spec if isinstance(spec, ArraySpec) else parse_spec(spec)
    sizes = axis_sizes(mesh)
    unknown = sorted({a for a in spec.used_axes if a not in sizes})
    if unknown:
        raise ValueError(f"{spec} uses mesh axes {unknown}; the mesh has {list(sizes)}")
    names = list(sizes)
    owners: dict[tuple[int, ...], list[Coord]] = {}
    for coord in itertools.product(*(range(n) for n in sizes.values())):
        at = dict(zip(names, coord))
        block = []
        for _, axes in spec.dims:
            index = 0
            for a in axes:
                index = index * sizes[a] + at[a]
            block.append(index)
        owners.setdefault(tuple(block), []).append(coord)
    return dict(sorted(owners.items()))


@dataclass(frozen=True)
class Piece:
    """A piece of the array on one device: `chunk` picks its colour, `fill` (0..1) how complete it is, `source` the
    device it started on (AllToAll; -1 where every device contributes)."""

    chunk: int
    fill: float
    label: str
    source: int = -1


@dataclass(frozen=True)
class RingStep:
    """The state of a ring collective after `step` steps: what each device holds, and what crossed each link.

    `held[i]` lists the pieces on device i; `links[(i, j)]` counts the pieces sent from i to its neighbour j
    during this step; `piece_fraction` is one piece's share of the whole array V (1/n, or 1/n² for AllToAll).
    """

    step: int
    held: tuple[tuple[Piece, ...], ...]
    links: dict[tuple[int, int], int]
    piece_fraction: float


def _sides(n: int, owner: int, bidirectional: bool, wrap: bool) -> list[tuple[int, list[int]]]:
    """The devices on each side of `owner`, nearest first, with the direction (+1 or -1) pieces travel."""
    if wrap:
        right = n // 2 if bidirectional else n - 1
        return [(+1, [(owner + d) % n for d in range(1, right + 1)]),
                (-1, [(owner - d) % n for d in range(1, n - right)])]
    return [(+1, list(range(owner + 1, n))), (-1, list(range(owner - 1, -1, -1)))]


def _check_ring(n: int, kind: str, bidirectional: bool, wrap: bool) -> None:
    """Raise `ValueError` naming the argument unless 2 ≤ n ≤ 16, `kind` is a ring kind and a one-way ring wraps."""
    if not isinstance(n, int) or not 2 <= n <= 16:
        raise ValueError(f"n={n!r} must be an integer number of devices from 2 to 16")
    if kind not in RING_KINDS:
        raise ValueError(f"kind={kind!r}; allowed: {list(RING_KINDS)}")
    if not wrap and not bidirectional:
        raise ValueError("a one-way line cannot reach its first device: a one-way ring needs wraparound (wrap=True)")


@checks(n="count", bidirectional="flag", wrap="flag")
def ring_schedule(n: int, kind: str = "all_gather", bidirectional: bool = True, wrap: bool = True) -> list[RingStep]:
    """Return the states of a ring collective over `n` devices, from step 0 (the start) to the last step.

    AllGather: shard j spreads from device j one hop per step in each direction. ReduceScatter: chunk j's
    partial sums flow towards device j, each device adding its own before passing them on (a piece's fill
    is the share of the n contributions it holds). AllReduce: the ReduceScatter's steps, then the AllGather's.
    AllToAll: device i's piece for device k moves one hop per
    step along the shortest way. Without `wrap` the devices form a line; without `bidirectional` every
    piece travels the same way round.
    """
    _check_ring(n, kind, bidirectional, wrap)
    if kind == "all_to_all":
        return _all_to_all_schedule(n, bidirectional, wrap)
    if kind == "all_reduce":  # a ReduceScatter, then an AllGather of the summed chunks
        scatter = ring_schedule(n, "reduce_scatter", bidirectional, wrap)
        gather = ring_schedule(n, "all_gather", bidirectional, wrap)[1:]
        return scatter + [RingStep(len(scatter) - 1 + s.step, s.held, s.links, s.piece_fraction) for s in gather]
    sides = {j: _sides(n, j, bidirectional, wrap) for j in range(n)}
    last = max(len(devs) for s in sides.values() for _, devs in s)
    if kind == "all_gather":
        have = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    else:
        have = [[1.0] * n for _ in range(n)]
    states = [_ring_state(0, have, {}, kind, n)]
    for step in range(1, last + 1):
        links: dict[tuple[int, int], int] = {}
        for j, side_list in sides.items():
            for _, devs in side_list:
                if step > len(devs):
                    continue
                if kind == "all_gather":
                    src, dst = ([j] + devs)[step - 1], devs[step - 1]
                    have[dst][j] = 1.0
                else:
                    far = len(devs) - step
                    src, dst = devs[far], ([j] + devs)[far]
                    have[dst][j] += have[src][j]
                    have[src][j] = 0.0
                links[(src, dst)] = links.get((src, dst), 0) + 1
        states.append(_ring_state(step, have, links, kind, n))
    return states


def _ring_state(step: int, have: list[list[float]], links: dict[tuple[int, int], int], kind: str,
                n: int) -> RingStep:
    """The `RingStep` of `have[i][j]` (device i's share of chunk j, counted in contributions) after `step` steps."""
    if kind == "all_gather":
        held = tuple(tuple(Piece(j, 1.0, str(j)) for j in range(n) if row[j]) for row in have)
    else:
        held = tuple(tuple(Piece(j, row[j] / n, f"{j}:{row[j]:.0f}") for j in range(n) if row[j]) for row in have)
    return RingStep(step, held, dict(links), 1 / n)


def _all_to_all_schedule(n: int, bidirectional: bool, wrap: bool) -> list[RingStep]:
    """The AllToAll's states: every (source, destination) piece moves one hop per step along its shortest way."""
    def direction(src: int, dst: int) -> int:
        if not wrap:
            return 1 if dst > src else -1
        ahead = (dst - src) % n
        return 1 if not bidirectional or ahead <= n // 2 else -1

    at = {(s, d): s for s in range(n) for d in range(n)}

    def state(step: int, links: dict[tuple[int, int], int]) -> RingStep:
        order = sorted(at.items(), key=lambda kv: kv[0][::-1])
        held = tuple(tuple(Piece(d, 1.0, f"{s}→{d}", s) for (s, d), where in order if where == i) for i in range(n))
        return RingStep(step, held, links, 1 / n**2)

    states, step = [state(0, {})], 0
    while any(where != d for (_, d), where in at.items()):
        step += 1
        links: dict[tuple[int, int], int] = {}
        for (s, d), where in at.items():
            if where != d:
                nxt = (where + direction(s, d)) % n
                links[(where, nxt)] = links.get((where, nxt), 0) + 1
                at[(s, d)] = nxt
        states.append(state(step, links))
    return states


@checks(states=is_a(list, tuple))
def busiest_link_pieces(states: Sequence[RingStep]) -> int:
    """Return the most pieces any one link carries in one direction over all of `states` (a ring schedule)."""
    totals: dict[tuple[int, int], int] = {}
    for s in states:
        for link, k in s.links.items():
            totals[link] = totals.get(link, 0) + k
    return max(totals.values(), default=0)


@checks(n="count", bidirectional="flag", wrap="flag")
def busiest_link_share(n: int, kind: str = "all_gather", bidirectional: bool = True, wrap: bool = True) -> float:
    """Return the share of the array V that crosses the busiest link (one direction) during a ring collective.

    In the bandwidth-bound regime the collective takes this share × V / (one-way link bandwidth): 1/2 for an
    AllGather on a bidirectional ring, (n-1)/n on a one-way ring; for an AllToAll (n+2)/(8n) on a bidirectional
    ring and (n-1)/(2n) on a one-way one.
    """
    states = ring_schedule(n, kind, bidirectional, wrap)
    return busiest_link_pieces(states) * states[0].piece_fraction


@checks(t_step="nonneg", t_send="nonneg", steps="count")
def overlapped_ring_time(t_step: float, t_send: float, steps: int) -> float:
    """Return the seconds of a ring of `steps` blocks that sends each block while it multiplies the previous one.

    The first block's matmul (`t_step`, s) has nothing to hide behind; each of the other steps − 1 waits for the
    slower of its matmul and its send (`t_send`, s): T = t_step + (steps − 1) · max(t_step, t_send).
    """
    return t_step + (steps - 1) * max(t_step, t_send)


# device (x, y) -> {slot (row, column) in its drawing: (colour index, fill 0..1)}; AllGather and ReduceScatter put
# piece (px, py) of the array in slot (px, py), coloured by the piece; AllToAll colours each piece by its destination.
Held = dict[tuple[int, int], dict[tuple[int, int], tuple[int, float]]]


def _check_torus(X: int, Y: int, kind: str) -> None:
    for name, n in (("X", X), ("Y", Y)):
        if not isinstance(n, int) or not 2 <= n <= 8:
            raise ValueError(f"{name}={n!r} must be an integer from 2 to 8")
    if kind not in RING_KINDS:
        raise ValueError(f"kind={kind!r}; allowed: {list(RING_KINDS)}")


def _gather_phases(X: int, Y: int) -> list[tuple[str, Held]]:
    xs, ys = ring_schedule(X, "all_gather"), ring_schedule(Y, "all_gather")
    out = []
    for s in xs:
        out.append((f"X ring, step {s.step}" if s.step else "start: one piece each",
                    {(x, y): {(p.chunk, y): (p.chunk * Y + y, 1.0) for p in s.held[x]}
                     for x in range(X) for y in range(Y)}))
    for s in ys[1:]:
        out.append((f"Y ring, step {s.step}",
                    {(x, y): {(j, p.chunk): (j * Y + p.chunk, 1.0) for j in range(X) for p in s.held[y]}
                     for x in range(X) for y in range(Y)}))
    return out


def _scatter_phases(X: int, Y: int) -> list[tuple[str, Held]]:
    """ReduceScatter is the gather run backwards: first the Y rings sum, then the X rings."""
    xs, ys = ring_schedule(X, "reduce_scatter"), ring_schedule(Y, "reduce_scatter")
    out = []
    for s in ys:
        out.append((f"Y ring, step {s.step}" if s.step else "start: every piece, unsummed",
                    {(x, y): {(j, p.chunk): (j * Y + p.chunk, p.fill / X) for j in range(X) for p in s.held[y]}
                     for x in range(X) for y in range(Y)}))
    for s in xs[1:]:
        out.append((f"X ring, step {s.step}",
                    {(x, y): {(p.chunk, y): (p.chunk * Y + y, p.fill) for p in s.held[x]}
                     for x in range(X) for y in range(Y)}))
    return out


def _slots(pieces: list[tuple[tuple[int, ...], int]], Y: int) -> dict[tuple[int, int], tuple[int, float]]:
    """Lay a device's AllToAll pieces (sort key, destination colour) out row by row, Y to a row."""
    return {divmod(k, Y): (colour, 1.0) for k, (_, colour) in enumerate(sorted(pieces))}


def _all_to_all_phases(X: int, Y: int) -> list[tuple[str, Held]]:
    """AllToAll over both axes: the X rings move every piece to its destination column, then the Y rings to its
    row. Device (x, y) starts with one piece for every device and ends with one piece from every device."""
    xs, ys = ring_schedule(X, "all_to_all"), ring_schedule(Y, "all_to_all")
    out = []
    for s in xs:  # ring piece source → chunk: the piece of device (source, y) for column chunk, any row dy
        out.append((f"X ring, step {s.step}" if s.step else "start: a piece for every device",
                    {(x, y): _slots([((p.source, p.chunk, dy), p.chunk * Y + dy) for p in s.held[x] for dy in range(Y)],
                                    Y) for x in range(X) for y in range(Y)}))
    for s in ys[1:]:  # now every piece on (x, y) is bound for column x: the Y rings carry it to its row
        out.append((f"Y ring, step {s.step}",
                    {(x, y): _slots([((j, p.source, p.chunk), x * Y + p.chunk) for p in s.held[y] for j in range(X)],
                                    Y) for x in range(X) for y in range(Y)}))
    return out


@checks(X="count", Y="count")
def torus_schedule(X: int = 4, Y: int = 4, kind: str = "all_gather") -> list[tuple[str, Held]]:
    """Return the states of a collective over both axes of an X × Y torus: (label, held) per step, where held maps
    each device (x, y) to the pieces it holds and how complete each is (1 = summed over every device).

    The array is cut into X·Y pieces; a two-axis collective runs one ring phase per axis (AllGather: X then Y;
    ReduceScatter: Y then X; AllReduce: ReduceScatter then AllGather; AllToAll: X then Y), each phase the ring
    schedule that `busiest_link_share` prices. X and Y count devices (2 to 8, to stay drawable).
    """
    _check_torus(X, Y, kind)
    if kind == "all_gather":
        return _gather_phases(X, Y)
    if kind == "reduce_scatter":
        return _scatter_phases(X, Y)
    if kind == "all_to_all":
        return _all_to_all_phases(X, Y)
    return _scatter_phases(X, Y) + [(f"AllGather: {label}", held) for label, held in _gather_phases(X, Y)[1:]]
