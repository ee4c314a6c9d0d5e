"""Report how fast `training.predict` and the calibrated planner answer (issue #19's targets).

    python benchmarks/predict_speed.py [--repeats 20]

Targets: `sb.training.predict` for a published layout in <= 5 ms; `sb.training.plan(..., efficiency="calibrated")`
for Llama 3 405B on 16,384 H100 in <= 0.5 s; the whole validation table as a courtesy figure. It reports the best
of `--repeats` runs beside each target and never gates (exit status 0 whatever the times): a busy machine is slow,
not wrong. Run it on a quiet machine. Each call starts cold: the cache of priced collectives that the planner shares
between its layouts is emptied first, so no call is timed on another's work.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import scalebook as sb
import scalebook.training.terms as terms
import scalebook.validation as validation

TOKENS, SEQ = 16 * 2**20, 8192


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """Seconds of the fastest of `repeats` calls of `fn`, each with the collectives' cache emptied."""
    times = []
    for _ in range(repeats):
        terms.collective_seconds.cache_clear()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20, help="calls timed per measurement (best is reported)")
    args = parser.parse_args()
    model = sb.get_model("llama3-405b")

    def predict() -> object:
        return sb.training.predict(model, "h100", 16384, TOKENS, SEQ, tp=8, pp=16, fsdp=128)

    def plan() -> object:
        return sb.training.plan(model, "h100", 16384, TOKENS, SEQ, efficiency="calibrated")

    def table() -> object:
        validation._results.cache_clear()
        return validation.results()

    rows = [("training.predict (405B, 16,384 H100)", best_of(predict, args.repeats), 5e-3),
            ("training.plan calibrated (405B, 16,384 H100)", best_of(plan, max(1, args.repeats // 4)), 0.5),
            ("validation.results (every run, ideal + calibrated)", best_of(table, max(1, args.repeats // 4)), None)]
    print(f"{'what':55s} {'best':>10s} {'target':>10s}")
    for what, seconds, target in rows:
        verdict = "" if target is None else ("  ok" if seconds <= target else "  SLOW")
        shown = "—" if target is None else f"{target * 1e3:.0f} ms"
        print(f"{what:55s} {seconds * 1e3:8.2f} ms {shown:>10s}{verdict}")


if __name__ == "__main__":
    main()
