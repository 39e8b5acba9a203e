"""The docs' first pages: the index's "Where next" links every page of the nav, and the README and the index say
the host is a placeholder before the first call."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from animalstore_client import AnimalStoreClient
from animalstore_client._core.environments import PLACEHOLDER_HOSTS

ROOT = Path(__file__).resolve().parent.parent


def _nav_pages() -> set[str]:
    """The files mkdocs.yml's nav lists (each entry a ``- Title: page.md`` line of the nav block)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    # The nav block ends at the next top-level key.
    nav = re.split(r"\n(?=\S)", config.split("\nnav:\n", 1)[1], maxsplit=1)[0]
    return set(re.findall(r"^\s*- .*?:\s*(\S+\.md)\s*$", nav, re.MULTILINE))


def test_where_next_links_every_page_of_the_nav() -> None:
    """Every nav page but the index itself is linked from index.md's "Where next" section."""
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    where_next = index.split("## Where next", 1)[1]
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", where_next))
    assert _nav_pages() - {"index.md"} <= linked, sorted(_nav_pages() - {"index.md"} - linked)
    assert len(_nav_pages()) >= 14


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_first_page_says_the_host_is_a_placeholder_before_the_first_call(page: str) -> None:
    """Before the first code block that calls the service, the page names the built-in placeholder hosts (exactly
    the SDK's) and both ways to set the real one, each of which the client reads."""
    text = (ROOT / page).read_text()
    before = text.split("with AnimalStoreClient() as client:", 1)[0]
    named = set(re.findall(r"`([\w.]+\.animalstore\.example)`", before))
    assert named == PLACEHOLDER_HOSTS
    assert "ANIMALSTORE_BASE_URL" in before
    assert "base_url=" in before
    client = AnimalStoreClient("k", base_url="https://store.example.net/v1")
    assert client.base_url == "https://store.example.net/v1"
    client.close()


def test_the_environment_variable_the_first_page_names_sets_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """ANIMALSTORE_BASE_URL, as the README says, replaces the placeholder."""
    monkeypatch.setenv("ANIMALSTORE_BASE_URL", "https://store.example.net/v1")
    with AnimalStoreClient("k") as client:
        assert client.base_url == "https://store.example.net/v1"


def test_the_readmes_list_of_examples_names_every_example() -> None:
    """Each script in examples/ is named in the README's "Examples" section, so a new one cannot be left out."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Examples", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([\w.]+\.py)`", section))
    assert {path.name for path in (ROOT / "examples").glob("*.py")} <= named


MAX_PROSE_WORDS = 10_000
"""The user pages' budget: what a newcomer reads past the code, at most."""
NOT_USER_PAGES = {"architecture.md", "performance.md", "changelog.md"}
"""Pages for contributors, measurements and the changelog: outside the user's path, outside the budget."""
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def prose_words(text: str) -> int:
    """The words a reader reads as prose: whitespace-separated, outside fenced blocks, headings, inline code and HTML
    comments (the measure of issue 60, which counted 10,841 on 1.4.0's pages)."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if opening is not None:
            marker = opening.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None and not line.startswith("#"):
            lines.append(line)
    prose = re.sub(r"<!--.*?-->", "", "\n".join(lines), flags=re.DOTALL)
    return len(re.sub(r"`[^`]*`", "", prose).split())  # a code span may run over a line break


def test_prose_words_counts_what_a_reader_reads() -> None:
    """Code blocks, headings, inline code and comments are not prose; tables and lists are, marks and all."""
    page = "# Title\n\nTwo words `and\ncode`.\n\n```python\nnot = counted\n```\n\n| a | b |\n<!-- no -->\n- item\n"
    assert prose_words(page) == len(["Two", "words", "."]) + len(["|", "a", "|", "b", "|"]) + len(["-", "item"])


def test_the_user_pages_stay_within_their_prose_budget() -> None:
    """README.md and the docs but architecture, performance and changelog: at most `MAX_PROSE_WORDS` prose words
    together. Cut repetition (a page links to the one that says it) before substance."""
    pages = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in NOT_USER_PAGES)]
    counts = {page.name: prose_words(page.read_text(encoding="utf-8")) for page in pages}
    assert sum(counts.values()) <= MAX_PROSE_WORDS, sorted(counts.items(), key=lambda item: -item[1])
