"""A weight-stationary systolic array, cycle by cycle: how a TPU's MXU multiplies X[B, D] @ W[D, F].

The array is a D x F grid of processing elements (PEs); PE (i, j) holds the weight W[i, j] for the whole
multiply. Row b of X enters the array skewed: X[b, i] reaches PE (i, 0) at cycle b + i and moves one PE
to the right per cycle. Each PE multiplies the activation passing through it by its weight, adds the
partial sum arriving from the PE above, and passes the result down. Y[b, j] leaves the bottom of column
j at cycle b + (D - 1) + j, so the whole product takes B + D + F - 2 cycles. Weights are taken as
already loaded (loading them is another D-cycle wave, overlapped with the previous multiply on a real
MXU). The fill and drain of this diagonal wavefront is the pipeline bubble: with few rows of X, most
PE-cycles are idle (How To Scale Your Model, ch. 2, appendix on systolic arrays).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .units import check_int, checks

__all__ = ["Grid", "Frame", "Simulation", "simulate", "cycles", "utilisation", "example"]


@dataclass(frozen=True)
class Grid:
    """A small 2-D array of numbers in pure Python: `grid[i, j]`, `.shape`, `.size`; `np.asarray(grid)` converts it.

    The simulator's arrays are at most MAX_SIDE on a side, so the standard library is fast enough, and the
    same code runs where NumPy is missing (the website's calculators, under Pyodide).
    """

    rows: tuple[tuple[float, ...], ...]

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.rows), len(self.rows[0]) if self.rows else 0

    @property
    def size(self) -> int:
        """Number of elements."""
        return self.shape[0] * self.shape[1]

    ndim = 2

    def __getitem__(self, index: tuple[int, int]) -> Any:
        i, j = index
        return self.rows[i][j]

    def __iter__(self) -> Iterator[tuple[float, ...]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def tolist(self) -> list[list[float]]:
        """The rows as lists."""
        return [list(r) for r in self.rows]

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np  # only a caller that holds NumPy asks for an array

        return np.array(self.rows, dtype=dtype)


@dataclass(frozen=True)
class Frame:
    """The array during one cycle.

    `row[i, j]` is the row b of X whose activation X[b, i] sits in PE (i, j) (-1 when the PE is idle);
    `psum[i, j]` is the partial sum sum_{i' <= i} X[b, i'] W[i', j] that PE passes down (nan when idle);
    `done` lists the outputs (b, j) that leave the bottom row this cycle.
    """

    cycle: int
    row: Grid
    psum: Grid
    done: tuple[tuple[int, int], ...]

    @property
    def busy(self) -> int:
        """Number of PEs doing a multiply-add this cycle."""
        return sum(b >= 0 for r in self.row for b in r)


@dataclass(frozen=True)
class Simulation:
    """A simulated multiply: the operands, one `Frame` per cycle, and the product X @ W it produced."""

    W: Grid
    X: Grid
    frames: tuple[Frame, ...]
    product: Grid

    @property
    def cycles(self) -> int:
        """Cycles from the first activation entering to the last output leaving."""
        return len(self.frames)

    @property
    def utilisation(self) -> float:
        """Fraction of PE-cycles spent on a multiply-add (the rest is the pipeline bubble)."""
        return sum(f.busy for f in self.frames) / (self.W.size * self.cycles)


@checks(B="count", D="count", F="count")
def cycles(B: int, D: int, F: int) -> int:
    """Return the cycles a D x F weight-stationary array needs for B rows of activations: B + D + F - 2."""
    B, D, F = (check_int(name, n) for name, n in (("B", B), ("D", D), ("F", F)))
    return B + D + F - 2


@checks(B="count", D="count", F="count")
def utilisation(B: int, D: int, F: int) -> float:
    """Return the busy fraction of PE-cycles, B·D·F / (D·F·cycles) = B / (B + D + F - 2).

    On a 128 x 128 MXU a single row of activations keeps under 0.4% of the array busy and it takes about
    2,300 rows to pass 90%: the MXU streams many rows through each loaded weight tile.
    """
    return B / cycles(B, D, F)


def _matrix(name: str, value: object) -> Grid:
    """A small finite 2-D array of numbers (a drawing of at most MAX_SIDE × MAX_SIDE cells)."""
    try:
        if isinstance(value, (str, bytes)) or any(isinstance(r, (str, bytes)) for r in value):  # type: ignore[attr-defined]
            raise TypeError
        rows = tuple(tuple(float(x) for x in r) for r in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a 2-D array of numbers") from None
    shape = (len(rows), len(rows[0]) if rows else 0)
    if any(len(r) != shape[1] for r in rows):
        raise ValueError(f"{name}={value!r} must be a 2-D array of numbers (rows of {sorted({len(r) for r in rows})} "
                         "elements)")
    if not 1 <= min(shape) <= max(shape) <= MAX_SIDE:
        raise ValueError(f"{name} must be a 2-D array of 1 to {MAX_SIDE} rows and columns, got shape {shape}")
    if not all(math.isfinite(x) for r in rows for x in r):
        raise ValueError(f"{name}={value!r} must hold finite numbers")
    return Grid(rows)


MAX_SIDE = 256  # the largest array the cycle-by-cycle drawing takes (its frames grow as B·D·F)


def simulate(W: Any, X: Any) -> Simulation:
    """Return the cycle-by-cycle `Simulation` of X[B, D] @ W[D, F] on a D x F weight-stationary array.

    `W` and `X` are 2-D arrays or nested sequences of numbers. Raises `ValueError` when the shapes do not chain.
    (`serving.simulate` is another simulator, of requests through a serving engine; each is read with its module.)
    The product is checked against X @ W computed directly.
    """
    W, X = _matrix("W", W), _matrix("X", X)
    if X.shape[1] != W.shape[0]:
        raise ValueError(f"need X[B, D] and W[D, F], got X{list(X.shape)} and W{list(W.shape)}")
    (B, D), F = X.shape, W.shape[1]
    nan = float("nan")
    row = [[-1] * F for _ in range(D)]
    act = [[0.0] * F for _ in range(D)]
    psum = [[nan] * F for _ in range(D)]
    out = [[0.0] * F for _ in range(B)]
    frames = []
    for t in range(cycles(B, D, F)):
        row = [[-1, *r[:-1]] for r in row]  # activations step right
        act = [[0.0, *a[:-1]] for a in act]
        for i in range(D):  # row b of X enters row i of the array at cycle b + i
            if 0 <= t - i < B:
                row[i][0], act[i][0] = t - i, X[t - i, i]
        above = [[0.0] * F] + [[0.0 if math.isnan(p) else p for p in r] for r in psum[:-1]]  # partial sums step down
        psum = [[above[i][j] + W[i, j] * act[i][j] if row[i][j] >= 0 else nan for j in range(F)] for i in range(D)]
        done = tuple((row[-1][j], j) for j in range(F) if row[-1][j] >= 0)
        for b, j in done:
            out[b][j] = psum[-1][j]
        frames.append(Frame(t, Grid(tuple(map(tuple, row))), Grid(tuple(map(tuple, psum))), done))
    exact = [[math.fsum(X[b, i] * W[i, j] for i in range(D)) for j in range(F)] for b in range(B)]
    assert all(math.isclose(o, e, rel_tol=1e-5, abs_tol=1e-8) for ro, re in zip(out, exact) for o, e in zip(ro, re)), \
        "systolic product differs from X @ W"
    return Simulation(W, X, tuple(frames), Grid(tuple(map(tuple, out))))


@checks(B=lambda n, v: check_int(n, v, 1, MAX_SIDE), D=lambda n, v: check_int(n, v, 1, MAX_SIDE),
        F=lambda n, v: check_int(n, v, 1, MAX_SIDE))
def example(B: int = 3, D: int = 4, F: int = 4) -> tuple[Grid, Grid]:
    """Return small integer operands (W[D, F], X[B, D]) whose partial sums are easy to read."""
    cycles(B, D, F)
    W = Grid(tuple(tuple(float((i + 2 * j) % 3 + 1) for j in range(F)) for i in range(D)))
    X = Grid(tuple(tuple(float((b + i) % 4 + 1) for i in range(D)) for b in range(B)))
    return W, X
