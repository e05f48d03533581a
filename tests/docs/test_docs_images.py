"""The docs' pictures: every one a page shows exists, every one in docs/img/ is shown, and the
screenshot tour has both frontends at each of its stops.

`just docs-images` copies the browser tests' screenshots over docs/img/: a picture a test stopped
taking, or one no page shows, would go stale there unseen.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
TOUR_STOPS = [
    "The first screen",
    "A review waiting",
    "A refused answer",
    "Answered",
    "A background run and its timer",
    "Deep-research sources",
]


def shown() -> dict[Path, list[Path]]:
    """Each picture the pages show, with the pages that show it."""
    found: dict[Path, list[Path]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for target in IMAGE.findall(page.read_text()):
            if "://" not in target:
                found.setdefault((page.parent / target).resolve(), []).append(page)
    return found


def test_every_picture_a_page_shows_exists() -> None:
    missing = {
        str(image.relative_to(DOCS)): [str(p.relative_to(DOCS)) for p in pages]
        for image, pages in shown().items()
        if not image.is_file()
    }
    assert missing == {}


def test_every_picture_in_docs_img_is_shown() -> None:
    pictures = {p.resolve() for p in (DOCS / "img").rglob("*.png")}
    unshown = sorted(str(p.relative_to(DOCS)) for p in pictures - set(shown()))
    assert unshown == []


def test_the_tour_shows_both_frontends_at_each_stop() -> None:
    tour = (DOCS / "demo" / "tour.md").read_text()
    sections = {}
    for section in tour.split("\n## ")[1:]:
        heading, _, body = section.partition("\n")
        sections[heading] = body
    assert list(sections) == TOUR_STOPS
    for heading, body in sections.items():
        frontends = sorted(Path(target).parent.name for target in IMAGE.findall(body))
        assert frontends == ["chainlit", "openwebui"], heading
