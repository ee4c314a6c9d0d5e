"""Report how fast the website's explorers come alive and answer, in headless Chromium, from a cold start.

    python benchmarks/live_site.py [--site _build/html] [--out benchmarks/out] [--pages 01_rooflines ...]

For each page with explorers (`make book` first): a fresh Chromium (no cache) loads the page over HTTP from a local
server; "live" is the page's own clock (`performance.now()`, from navigation start) when the bridge reports
every explorer live or left a snapshot (a start that falls silent gets a second worker: counted). Then, for each
live explorer, one control moves twice: the first move warms up, the second is timed from the `change` event to
the new answer drawn (the bridge's `data-answer-ms`).
Targets (issue #40): live ≤ 10 s after the page loads (median over pages), an answer ≤ 100 ms after warm-up
(median over explorers). It reports and never gates; writes `live_site.md` and `live_site.json` to --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "site"), str(ROOT / "tests")]  # the site's helpers, and theirs

from live import LivePage, Server  # noqa: E402
from test_live import a_move, position  # noqa: E402


def measure_page(server: Server, site: Path, page: Path) -> dict:
    """Seconds to live and each live explorer's warm answer time on one page, from a cold browser."""
    live = LivePage(server.url(page.relative_to(site)))
    try:
        live_s = live.wait_ready() / 1e3
        starts = int(live.evaluate("document.documentElement.dataset.scalebookStarts || 0"))
        answers, states = [], []
        for i, box in enumerate(live.explorers()):
            states.append(box["state"])
            if box["state"] != "live":
                continue
            name, value = a_move(box["about"])
            live.move(i, name, value)  # warm-up: the first call imports the explorer's modules
            control = next(c for c in box["about"]["controls"] if c["name"] == name)
            back = position(control, control["value"])  # back to the worked answer, timed
            answers.append(live.move(i, name, back)["ms"])
        return {"page": str(page.relative_to(site)), "live_s": live_s, "starts": starts, "answer_ms": answers,
                "explorers": len(states), "live": states.count("live"), "offsite": live.offsite()}
    finally:
        live.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    parser.add_argument("--pages", nargs="*", help="page stems to measure (default: every page with explorers)")
    args = parser.parse_args()
    pages = sorted(p for p in args.site.rglob("*.html") if "_static" not in p.parts
                   and "data-scalebook=" in p.read_text(encoding="utf-8")
                   and (not args.pages or p.stem in args.pages))
    if not pages:
        sys.exit(f"no page with explorers in {args.site}: run `make book` first")
    server = Server(args.site)
    try:
        rows = [measure_page(server, args.site, p) for p in pages]
    finally:
        server.close()
    answers = [ms for r in rows for ms in r["answer_ms"]]
    summary = {"pages": len(rows), "median_live_s": statistics.median(r["live_s"] for r in rows),
               "median_answer_ms": statistics.median(answers) if answers else None,
               "explorers": sum(r["explorers"] for r in rows), "live": sum(r["live"] for r in rows),
               "offsite_requests": sum(len(r["offsite"]) for r in rows),
               "restarted": sum(r["starts"] > 1 for r in rows)}
    lines = ["| page | explorers | live | to live (s) | answer, median (ms) |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['page']} | {r['explorers']} | {r['live']} | {r['live_s']:.1f} | "
              f"{statistics.median(r['answer_ms']) if r['answer_ms'] else float('nan'):.1f} |" for r in rows]
    lines += ["", f"median time to live: {summary['median_live_s']:.1f} s (target ≤ 10 s); median answer after "
              f"warm-up: {summary['median_answer_ms']:.1f} ms (target ≤ 100 ms); {summary['live']} of "
              f"{summary['explorers']} explorers live; {summary['offsite_requests']} requests left the host; "
              f"{summary['restarted']} pages needed a second worker to start Python"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live_site.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "live_site.json").write_text(json.dumps({"summary": summary, "pages": rows}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
