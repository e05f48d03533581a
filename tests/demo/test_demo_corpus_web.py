"""The demo corpus served by the API: a citation's URL opens its document at the passage."""

from __future__ import annotations

import html
import re

import httpx2
import pytest

from demo.corpus import default_corpus, sentences
from demo.registry import create_registry
from lgos import ServerSettings, create_app

pytestmark = pytest.mark.anyio


async def test_every_document_is_a_page_whose_sentences_are_passages() -> None:
    app = create_app(
        create_registry,
        settings=ServerSettings(POSTGRES_URI=None, BACKGROUND="memory", CORS_ORIGINS=[]),
    )
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
            listing = await http.get("/corpus")
            assert listing.status_code == 200
            for document in default_corpus().documents.values():
                assert f"/corpus/{document.id}" in listing.text
                page = await http.get(f"/corpus/{document.id}")
                assert page.status_code == 200
                assert page.headers["content-type"].startswith("text/html")
                passages = re.findall(r'id="passage-(\d+)">([^<]*)<', page.text)
                # Passage N of the page is sentence N of the document: what citations name.
                expected = [html.escape(s) for s in sentences(document.text)]
                assert [text for _n, text in passages] == expected
                assert [int(n) for n, _text in passages] == list(range(len(expected)))
            missing = await http.get("/corpus/no-such-document")
            assert missing.status_code == 404
            assert "no-such-document" in missing.json()["error"]["message"]


def test_a_passage_url_names_the_quoted_sentence() -> None:
    document = default_corpus().documents["kite-design"]
    quoted = sentences(document.text)[3]
    assert document.passage_url(quoted) == f"{document.url}#passage-3"
    # A paraphrase lands on the sentence it shares the most words with.
    assert document.passage_url("tethers rated 420 kilonewtons stronger design").endswith(
        "#passage-" + str(next(i for i, s in enumerate(sentences(document.text)) if "420" in s))
    )
