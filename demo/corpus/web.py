"""The demo corpus as web pages, served by the API next to the OpenAI routes.

`GET /corpus` lists the documents; `GET /corpus/{doc_id}` shows one, each prose sentence with
the anchor `passage-N` (its index in `sentences()`), so a citation's URL
(`Document.passage_url`) opens the document scrolled to the cited sentence, highlighted by the
`:target` style. The demo registry adds this router to the application `lgos serve` runs.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, HTTPException
from starlette.responses import HTMLResponse

from demo.corpus import _SENTENCE_END, Corpus, Document, default_corpus

STYLE = """
body { font: 17px/1.6 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem;
       color: #1f2328; }
.passage { border-radius: 3px; padding: 0 2px; }
.passage:target { background: #fff3b0; outline: 2px solid #e3b341; scroll-margin-top: 40vh; }
footer { margin-top: 3rem; color: #656d76; font-size: 14px; }
"""


def render_document(document: Document) -> str:
    """The document as HTML: headings, lists, and paragraphs whose sentences are passages.

    Walks the text exactly as `sentences()` does, so passage N is that function's N-th sentence.
    """
    parts: list[str] = []
    index = 0
    for paragraph in document.text.split("\n\n"):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if paragraph.startswith("#"):
            level = min(len(paragraph) - len(paragraph.lstrip("#")), 3)
            parts.append(f"<h{level}>{html.escape(paragraph.lstrip('# '))}</h{level}>")
        elif paragraph.startswith("-"):
            items = [line.lstrip("- ").strip() for line in paragraph.splitlines() if line.strip()]
            parts.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>")
        else:
            spans = []
            for sentence in (p.strip() for p in _SENTENCE_END.split(paragraph)):
                if sentence:
                    spans.append(
                        f'<span class="passage" id="passage-{index}">{html.escape(sentence)}</span>'
                    )
                    index += 1
            parts.append("<p>" + " ".join(spans) + "</p>")
    title = html.escape(document.title)
    return (
        f"<!doctype html><html lang='en'><meta charset='utf-8'><title>{title}</title>"
        f"<style>{STYLE}</style><body>{''.join(parts)}"
        "<footer>Fictional demo document of the Port Aveline Tidal Kite Array "
        "(<a href='.'>all documents</a>).</footer></body></html>"
    )


def corpus_router(corpus: Corpus | None = None) -> APIRouter:
    router = APIRouter(prefix="/corpus")

    def documents() -> Corpus:
        return corpus or default_corpus()

    @router.get("", response_class=HTMLResponse, include_in_schema=False)
    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> HTMLResponse:
        rows = "".join(
            f"<li><a href='/corpus/{html.escape(d.id)}'>{html.escape(d.title)}</a></li>"
            for d in documents().documents.values()
        )
        return HTMLResponse(
            f"<!doctype html><meta charset='utf-8'><title>Demo corpus</title>"
            f"<style>{STYLE}</style><h1>Demo corpus</h1><ul>{rows}</ul>"
        )

    @router.get("/{doc_id}", response_class=HTMLResponse, include_in_schema=False)
    async def document(doc_id: str) -> HTMLResponse:
        found = documents().get(doc_id)
        if found is None:
            raise HTTPException(status_code=404, detail=f"No document has the id {doc_id!r}.")
        return HTMLResponse(render_document(found))

    return router
