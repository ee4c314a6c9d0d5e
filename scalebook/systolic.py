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

from dataclasses import dataclass

import numpy as np

from .units import check_int, checks

__all__ = ["Frame", "Run", "simulate", "cycles", "utilisation", "example"]


@dataclass(frozen=True)
class Frame:
    """The array during one cycle.

    `row[i, j]` is the row b of X whose activation X[b, i] sits in PE (i, j) (-1 when the PE is idle);
    `psum[i, j]` is the partial sum sum_{i' <= i} X[b, i'] W[i', j] that PE passes down (nan when idle);
    `done` lists the outputs (b, j) that leave the bottom row this cycle.
    """

    cycle: int
    row: np.ndarray
    psum: np.ndarray
    done: tuple[tuple[int, int], ...]

    @property
    def busy(self) -> int:
        """Number of PEs doing a multiply-add this cycle."""
        return int((self.row >= 0).sum())


@dataclass(frozen=True)
class Run:
    """A simulated multiply: the operands, one `Frame` per cycle, and the product X @ W it produced."""

    W: np.ndarray
    X: np.ndarray
    frames: tuple[Frame, ...]
    product: np.ndarray

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


def _matrix(name: str, value: object) -> np.ndarray:
    """A small finite 2-D array of numbers (a drawing of at most MAX_SIDE × MAX_SIDE cells)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a 2-D array of numbers") from None
    if array.ndim != 2 or not 1 <= min(array.shape) <= max(array.shape) <= MAX_SIDE:
        raise ValueError(f"{name} must be a 2-D array of 1 to {MAX_SIDE} rows and columns, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}={value!r} must hold finite numbers")
    return array


MAX_SIDE = 256  # the largest array the cycle-by-cycle drawing takes (its frames grow as B·D·F)


def simulate(W: np.ndarray, X: np.ndarray) -> Run:
    """Return the cycle-by-cycle `Run` of X[B, D] @ W[D, F] on a D x F weight-stationary array.

    Raises `ValueError` when the shapes do not chain. The product is checked against `X @ W`.
    """
    W, X = _matrix("W", W), _matrix("X", X)
    if W.ndim != 2 or X.ndim != 2 or X.shape[1] != W.shape[0]:
        raise ValueError(f"need X[B, D] and W[D, F], got X{list(X.shape)} and W{list(W.shape)}")
    (B, D), F = X.shape, W.shape[1]
    row = np.full((D, F), -1)
    act = np.zeros((D, F))
    psum = np.full((D, F), np.nan)
    out = np.zeros((B, F))
    frames = []
    for t in range(cycles(B, D, F)):
        row = np.concatenate([np.full((D, 1), -1), row[:, :-1]], axis=1)  # activations step right
        act = np.concatenate([np.zeros((D, 1)), act[:, :-1]], axis=1)
        for i in range(D):  # row b of X enters row i of the array at cycle b + i
            if 0 <= t - i < B:
                row[i, 0], act[i, 0] = t - i, X[t - i, i]
        above = np.vstack([np.zeros((1, F)), np.nan_to_num(psum[:-1])])  # partial sums step down
        psum = np.where(row >= 0, above + W * act, np.nan)
        done = tuple((int(row[-1, j]), j) for j in range(F) if row[-1, j] >= 0)
        for b, j in done:
            out[b, j] = psum[-1, j]
        frames.append(Frame(t, row.copy(), psum.copy(), done))
    assert np.allclose(out, X @ W), "systolic product differs from X @ W"
    return Run(W, X, tuple(frames), out)


@checks(B=lambda n, v: check_int(n, v, 1, MAX_SIDE), D=lambda n, v: check_int(n, v, 1, MAX_SIDE),
        F=lambda n, v: check_int(n, v, 1, MAX_SIDE))
def example(B: int = 3, D: int = 4, F: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Return small integer operands (W[D, F], X[B, D]) whose partial sums are easy to read."""
    cycles(B, D, F)
    W = (np.add.outer(np.arange(D), 2 * np.arange(F)) % 3 + 1).astype(float)
    X = (np.add.outer(np.arange(B), np.arange(D)) % 4 + 1).astype(float)
    return W, X
