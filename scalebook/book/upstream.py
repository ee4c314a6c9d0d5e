"""The upstream ledger: the commit of *How To Scale Your Model* the chapters follow, and every later one, classified.

`data/upstream.toml` pins the upstream commit the chapters were written against and lists each commit after it,
oldest first, with its parent, up to `head`, the newest one read. Each is *adopted* (where), *already agreed*
(where), *we disagree* (why, and the scalebook call that computes our number) or *not applicable* (why).
`check` fails when the ledger has fallen behind its own pin: an entry out of the parent chain (a commit between
`pin` and `head` left unclassified), a chain that does not end at `head`, or an entry without its reason.
Standard library only.

    python -m scalebook.book.upstream              # the ledger, one line a commit, and the counts
    python -m scalebook.book.upstream check        # what `make check-sync` runs
    python -m scalebook.book.upstream check --repo PATH   # also compare with a local clone of upstream
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import load

__all__ = ["STATUSES", "Commit", "ledger", "pin", "head", "counts", "problems", "upstream_shas", "check", "main"]

STATUSES = ("adopted", "already agreed", "we disagree", "not applicable")
LEDGER = "data/upstream.toml"
# What each status must say, beyond the commit itself: where we adopted or agree, why we disagree (and the
# computation behind it), why it does not apply.
REQUIRED = {"adopted": ("where",), "already agreed": ("where",), "we disagree": ("why", "computation"),
            "not applicable": ("note",)}


@dataclass(frozen=True)
class Commit:
    """One upstream commit after the pin: its hash, parent, date, subject and what we did with it."""

    sha: str
    parent: str
    date: str
    subject: str
    status: str
    where: str = ""
    why: str = ""
    computation: str = ""
    note: str = ""

    @property
    def short(self) -> str:
        """The 7-character hash upstream's history shows."""
        return self.sha[:7]


def _data(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return load(LEDGER)
    return tomllib.loads(Path(path).read_text(encoding="utf-8"))


def ledger(path: str | Path | None = None) -> list[Commit]:
    """Return the classified upstream commits, oldest first (`path`: another ledger file, for tests)."""
    fields = set(Commit.__dataclass_fields__)
    return [Commit(**{k: v for k, v in row.items() if k in fields}) for row in _data(path).get("commit", [])]


def pin(path: str | Path | None = None) -> dict[str, str]:
    """Return the pinned upstream commit: its sha, date and subject."""
    return dict(_data(path)["pin"])


def head(path: str | Path | None = None) -> dict[str, str]:
    """Return the newest upstream commit the ledger has read: its sha and date."""
    return dict(_data(path)["head"])


def counts(path: str | Path | None = None) -> dict[str, int]:
    """Return how many commits have each status (every status listed, zeros included)."""
    seen = Counter(c.status for c in ledger(path))
    return {s: seen.get(s, 0) for s in STATUSES}


def problems(data: dict[str, Any]) -> list[str]:
    """Return one line per way the parsed ledger `data` is stale or incomplete (empty when it is sound)."""
    out = []
    for key in ("pin", "head"):
        if not isinstance(data.get(key), dict) or len(str(data[key].get("sha", ""))) != 40:
            out.append(f"[{key}] needs the full 40-character sha of an upstream commit")
    if out:
        return out
    rows = data.get("commit", [])
    expected_parent = data["pin"]["sha"]
    for i, row in enumerate(rows):
        sha, status = row.get("sha", ""), row.get("status")
        name = f"commit {i + 1} ({str(sha)[:7] or 'no sha'})"
        if row.get("parent") != expected_parent:
            out.append(f"{name}: its parent is {str(row.get('parent'))[:7]}, but the commit before it in the "
                       f"chain is {expected_parent[:7]}: a commit in between is unclassified")
        if status not in STATUSES:
            out.append(f"{name}: status={status!r}; allowed: {list(STATUSES)}")
        else:
            out += [f"{name}: status {status!r} needs a non-empty {field!r}"
                    for field in REQUIRED[status] if not str(row.get(field, "")).strip()]
        expected_parent = sha
    if expected_parent != data["head"]["sha"]:
        out.append(f"the ledger ends at {expected_parent[:7]} but [head] is {data['head']['sha'][:7]}: "
                   f"the commits up to the head are unclassified")
    return out


def upstream_shas(repo: str | Path, since: str, until: str = "HEAD") -> list[str]:
    """Return the shas of a local upstream clone `repo` after `since` up to `until`, oldest first (runs git)."""
    result = subprocess.run(["git", "-C", str(repo), "rev-list", "--reverse", "--first-parent", f"{since}..{until}"],
                            capture_output=True, text=True, check=True)
    return result.stdout.split()


def check(path: str | Path | None = None, repo: str | Path | None = None) -> list[str]:
    """Return the ledger's problems; with `repo` (a clone of upstream) also every commit it has and we lack."""
    data = _data(path)
    out = problems(data)
    if repo is not None and not out:
        have = [row["sha"] for row in data.get("commit", [])]
        theirs = upstream_shas(repo, data["pin"]["sha"])
        out += [f"upstream commit {sha[:7]} is not in the ledger" for sha in theirs if sha not in have]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scalebook.book.upstream", description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=["show", "check"], default="show")
    parser.add_argument("--ledger", type=Path, default=None, help="another ledger file (default: the package's)")
    parser.add_argument("--repo", type=Path, default=None, help="a local clone of upstream to compare with")
    args = parser.parse_args(argv)
    if args.command == "show":
        for c in ledger(args.ledger):
            print(f"{c.short} {c.date} {c.status:15} {c.subject}")
        print(", ".join(f"{n} {s}" for s, n in counts(args.ledger).items()))
        return 0
    found = check(args.ledger, args.repo)
    for line in found:
        print(f"upstream ledger: {line}", file=sys.stderr)
    if not found:
        p, h = pin(args.ledger), head(args.ledger)
        print(f"upstream ledger: {len(ledger(args.ledger))} commits classified, {p['sha'][:7]} → {h['sha'][:7]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
