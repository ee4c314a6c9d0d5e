"""The traffic a serving engine meets: token-count distributions (`Lengths`), Poisson arrivals with a prefix cache
(`Workload`), and the requests a workload draws (`Requests`).

Plain Python on the standard library's Mersenne Twister, seeded by name, so the same seed draws the same requests
in the reader's browser (Pyodide).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from itertools import accumulate

from ...units import check_kind, check_number, checks, is_a

__all__ = ["Lengths", "Workload", "Requests", "CHAT_PROMPT", "CHAT_OUTPUT"]

MAX_TOKENS, MAX_SIGMA = 1e9, 4.0  # the longest prompt or output a workload may describe; the widest spread


@dataclass(frozen=True)
class Requests:
    """Sampled requests, in arrival order: `arrival` (s), `prompt`, `uncached` (prompt tokens to prefill) and
    `output` (tokens to generate, the first included)."""

    arrival: tuple[float, ...]
    prompt: tuple[int, ...]
    uncached: tuple[int, ...]
    output: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.arrival)



@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: lognormal with `median` tokens and shape `sigma` (0 = always `median`)."""

    median: float
    sigma: float = 0.0

    def __post_init__(self) -> None:
        # Bounded so that a sample stays a modest token count (a lognormal of sigma 4 already spans e^±9).
        check_number("median", self.median, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}]")
        check_number("sigma", self.sigma, low=0.0, high=MAX_SIGMA, what=f"a lognormal shape in [0, {MAX_SIGMA:g}]")

    @checks(rng=is_a(random.Random), n="count")
    def sample(self, rng: random.Random, n: int) -> tuple[int, ...]:
        """Return `n` token counts (integers >= 1), drawn from `rng`."""
        if self.sigma == 0:
            return (max(1, round(self.median)),) * n
        mu = math.log(self.median)
        return tuple(int(min(max(round(rng.lognormvariate(mu, self.sigma)), 1), MAX_TOKENS)) for _ in range(n))


def _lengths(name: str, value: Lengths | float) -> Lengths:
    if isinstance(value, Lengths):
        return value
    check_number(name, value, low=1.0, high=MAX_TOKENS, what=f"a token count in [1, {MAX_TOKENS:g}] or a Lengths")
    return Lengths(value)


@dataclass(frozen=True)
class Workload:
    """The traffic: Poisson arrivals at `rate` requests/s (`math.inf`: all at time 0), prompt and output lengths
    (token counts or `Lengths`), and a prefix cache that holds a fraction `prefix_fraction` of a prompt with
    probability `prefix_hit`."""

    rate: float
    prompt: Lengths | float = 1024
    output: Lengths | float = 256
    prefix_hit: float = 0.0
    prefix_fraction: float = 0.5

    def __post_init__(self) -> None:
        check_number("rate", self.rate, low=0.0, low_open=True, high=math.inf,
                     what="a positive number of requests/s (math.inf: all at once)")
        for name in ("prefix_hit", "prefix_fraction"):
            check_kind(name, getattr(self, name), "frac0")
        object.__setattr__(self, "prompt", _lengths("prompt", self.prompt))
        object.__setattr__(self, "output", _lengths("output", self.output))

    @checks(n_requests="count", seed="count0")
    def sample(self, n_requests: int, seed: int = 0) -> Requests:
        """Return `n_requests` requests. Arrivals, lengths and cache hits draw from separate streams of `seed`
        (the standard library's Mersenne Twister, seeded by name), so changing one knob leaves the others' draws
        alone and the same seed gives the same requests in the reader's browser."""
        rngs = [random.Random(f"scalebook.serving/{seed}/{stream}") for stream in range(4)]
        finite = math.isfinite(self.rate)
        gaps = [rngs[0].expovariate(self.rate) if finite else 0.0 for _ in range(n_requests)]
        prompt, output = self.prompt.sample(rngs[1], n_requests), self.output.sample(rngs[2], n_requests)
        hit = [rngs[3].random() < self.prefix_hit for _ in range(n_requests)]
        uncached = tuple(max(1, p - math.floor(self.prefix_fraction * p)) if h else p for p, h in zip(prompt, hit))
        return Requests(tuple(accumulate(gaps)), prompt, uncached, output)

    def typical_context(self) -> float:
        """Return the tokens a median sequence holds when it finishes: median prompt + median output."""
        return self.prompt.median + self.output.median


# The chapter's simulated chat traffic: lognormal prompts of median 2048 tokens and replies of median 512.
CHAT_PROMPT, CHAT_OUTPUT = Lengths(2048, 0.5), Lengths(512, 0.5)
