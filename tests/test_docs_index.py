"""The index's "Where next" links every page of the site's navigation, so no page is reachable only by search."""

from __future__ import annotations

import re
from pathlib import Path

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
