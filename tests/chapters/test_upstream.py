"""The upstream ledger keeps pace with the book: every commit after the pin classified, in an unbroken chain up to
the head, each with where we took it or why not; a ledger with a gap or a short chain fails `make check-sync`; and
the notes the ledger's commits made stale are gone from the chapters."""

from __future__ import annotations

import copy
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from scalebook.book import upstream

ROOT = Path(__file__).resolve().parents[2]
DATA = tomllib.loads((ROOT / "scalebook" / "data" / "upstream.toml").read_text(encoding="utf-8"))


def _text(chapter: str) -> str:
    """A chapter's source with its line breaks folded, so a phrase is found wherever the lines wrap."""
    return " ".join((ROOT / "chapters" / f"{chapter}.md").read_text(encoding="utf-8").split())


def test_the_ledger_classifies_all_18_commits_after_the_pin() -> None:
    commits = upstream.ledger()
    assert upstream.pin()["sha"].startswith("e5de31b") and upstream.head()["sha"].startswith("37acb5e")
    assert len(commits) == 18
    assert [c.short for c in commits][-1] == "37acb5e"
    assert upstream.problems(DATA) == []
    assert sum(upstream.counts().values()) == 18
    assert upstream.counts() == {"adopted": 9, "already agreed": 3, "we disagree": 0, "not applicable": 6}


def test_every_commit_says_where_or_why() -> None:
    for c in upstream.ledger():
        assert c.status in upstream.STATUSES
        reason = {"adopted": c.where, "already agreed": c.where, "we disagree": c.why and c.computation,
                  "not applicable": c.note}[c.status]
        assert reason.strip(), c.short


def test_adopted_entries_name_files_that_exist() -> None:
    for c in upstream.ledger():
        for path in re.findall(r"\b(?:chapters|scalebook)/[\w/]+\.(?:md|py|toml|json)", c.where):
            assert (ROOT / path).exists(), f"{c.short} names {path}"


def _without(index: int) -> dict:
    data = copy.deepcopy(DATA)
    del data["commit"][index]
    return data


def test_a_commit_left_out_of_the_middle_fails() -> None:
    found = upstream.problems(_without(7))
    assert len(found) == 1 and "unclassified" in found[0] and "64ad5b0" in found[0]


def test_a_ledger_that_stops_before_its_head_fails() -> None:
    found = upstream.problems(_without(-1))
    assert found == ["the ledger ends at d10181e but [head] is 37acb5e: the commits up to the head are unclassified"]


def test_a_head_moved_on_without_new_entries_fails() -> None:
    data = copy.deepcopy(DATA)
    data["head"]["sha"] = "f" * 40
    assert "unclassified" in upstream.problems(data)[-1]


@pytest.mark.parametrize("change, message", [
    ({"status": "maybe"}, "allowed"),
    ({"status": "we disagree", "why": "the book rounds"}, "'computation'"),
    ({"status": "adopted", "where": " "}, "'where'"),
])
def test_an_entry_without_its_reason_fails(change: dict, message: str) -> None:
    data = copy.deepcopy(DATA)
    data["commit"][0] = {k: v for k, v in data["commit"][0].items() if k not in ("where", "note")} | change
    assert any(message in line for line in upstream.problems(data))


def test_the_command_fails_on_a_stale_ledger_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = (ROOT / "scalebook" / "data" / "upstream.toml").read_text(encoding="utf-8")
    stale = tmp_path / "upstream.toml"
    stale.write_text(text.split("[[commit]]\nsha = \"37acb5e")[0], encoding="utf-8")  # drop the last entry on
    assert upstream.main(["check", "--ledger", str(stale)]) == 1
    assert "unclassified" in capsys.readouterr().err
    assert upstream.main(["check"]) == 0


def test_make_check_sync_runs_the_ledger_check() -> None:
    recipe = re.search(r"^check-sync:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.M | re.S).group(0)
    assert "-m scalebook.book.upstream check" in recipe


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_a_clone_with_commits_the_ledger_lacks_fails(tmp_path: Path) -> None:
    repo = tmp_path / "book"
    repo.mkdir()
    _git(repo, "init", "-q")
    shas = []
    for i in range(3):
        (repo / "page.md").write_text(f"version {i}\n")
        _git(repo, "add", "page.md")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"v{i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    entry = 'status = "not applicable"\nnote = "test"\n'
    ledger = (f'[pin]\nsha = "{shas[0]}"\n[head]\nsha = "{shas[1]}"\n'
              f'[[commit]]\nsha = "{shas[1]}"\nparent = "{shas[0]}"\ndate = "d"\nsubject = "v1"\n{entry}')
    path = tmp_path / "ledger.toml"
    path.write_text(ledger)
    assert upstream.check(path) == []
    assert upstream.check(path, repo) == [f"upstream commit {shas[2][:7]} is not in the ledger"]


# Notes the ledger's commits made stale, by chapter: none may come back.
STALE = {
    "04_transformers": ["512 kB", "diagrams (including the book's) often draw the post-norm"],
    "12_gpus": ["the book's is 2x ours", "We count it differently", "book = V / 6.4e12", "PR #128 corrects",
                "PR #128 fixes", "so we keep ours and print the book's beside it"],
    "09_profiling": ["free-Colab TPU v2"],
}


@pytest.mark.parametrize("chapter", sorted(STALE))
def test_no_stale_book_notes_are_left(chapter: str) -> None:
    text = _text(chapter)
    assert [phrase for phrase in STALE[chapter] if phrase in text] == []


def test_the_adopted_notes_are_in_the_chapters() -> None:
    assert "AllGather_XZ is 2x faster" in _text("03_sharding")
    assert "AllGather_XYZ is 1.5x faster" in _text("03_sharding")
    assert "512 KiB per token, as the book writes it" in _text("04_transformers")
    assert "upstream corrected the spine's bandwidth from 25.6 to 51.2 TB/s" in _text("12_gpus")
    assert "no longer hands out the eight-core TPU v2-8" in _text("00_intro")
    assert "JAX 0.9 changed `jax.make_mesh`'s default from Auto to Explicit" in _text("10_jax")
