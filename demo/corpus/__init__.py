"""The fictional document collection `deep-research` searches, and its keyword search.

The documents ship in the repository (see README.md here) so the demo runs offline. The API
serves them (demo/corpus/web.py, under `DEMO_CORPUS_URL`), so every citation opens its document
at the cited passage. Search is Okapi BM25 over titles and bodies: enough to rank a dozen
documents well, with no index service and no embedding model to download.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CORPUS_DIR = Path(__file__).parent
# Where a browser reaches the corpus route of the API (demo/corpus/web.py). The API and the
# workers both write citations, so both read it; the local stack sets it from its API port.
CORPUS_URL_VARIABLE = "DEMO_CORPUS_URL"
DEFAULT_CORPUS_URL = "http://127.0.0.1:8000/corpus"


def corpus_url() -> str:
    return (os.environ.get(CORPUS_URL_VARIABLE) or DEFAULT_CORPUS_URL).rstrip("/")


_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_STOPWORD_TEXT = """
    a about after all also an and any are as at be because been before being between both but
    by can could did do does doing for from had has have how i if in into is it its itself more
    most no not of on or other our out over own same so some such than that the their them then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# BM25's usual constants: term-frequency saturation and document-length normalisation.
_K1 = 1.5
_B = 0.75


def terms(text: str) -> list[str]:
    """Lower-cased words without stopwords, plural 's' stripped so 'kites' finds 'kite'."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


def sentences(text: str) -> list[str]:
    """Prose sentences of a document: headings and data lines are not quotable claims."""
    found: list[str] = []
    for paragraph in text.split("\n\n"):
        paragraph = paragraph.strip()
        if not paragraph or paragraph.startswith(("#", "-")):
            continue
        found.extend(part.strip() for part in _SENTENCE_END.split(paragraph) if part.strip())
    return found


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    url: str
    text: str

    def passage_url(self, quote: str) -> str:
        """The document's URL at the passage (the prose sentence) that best matches `quote`:
        `#passage-N`, the anchor the corpus page gives its N-th sentence."""
        return f"{self.url}#passage-{passage_of(self, quote)}"


def passage_of(document: Document, quote: str) -> int:
    """Index, in `sentences(document.text)`, of the sentence `quote` is (or is most like)."""
    found = sentences(document.text)
    text = quote.strip()
    for index, sentence in enumerate(found):
        if text and (text in sentence or sentence in text):
            return index
    wanted = set(terms(text))
    scores = [len(wanted & set(terms(sentence))) for sentence in found]
    return max(range(len(found)), key=lambda index: scores[index]) if found else 0


@dataclass(frozen=True, slots=True)
class SearchHit:
    document: Document
    score: float
    snippet: str

    def as_json(self) -> dict[str, Any]:
        return {
            "doc_id": self.document.id,
            "title": self.document.title,
            "url": self.document.url,
            "score": round(self.score, 3),
            "snippet": self.snippet,
        }


class Corpus:
    """Documents by id with a BM25 index built once."""

    def __init__(self, documents: list[Document]) -> None:
        if not documents:
            raise ValueError("a corpus needs at least one document")
        self.documents = {document.id: document for document in documents}
        # The title counts twice: a title match is stronger evidence than a passing mention.
        self._bags = {
            document.id: Counter(terms(f"{document.title} {document.title} {document.text}"))
            for document in documents
        }
        self._lengths = {doc_id: sum(bag.values()) for doc_id, bag in self._bags.items()}
        self._average_length = sum(self._lengths.values()) / len(self._lengths)
        frequency: Counter[str] = Counter()
        for bag in self._bags.values():
            frequency.update(bag.keys())
        total = len(documents)
        self._idf = {
            term: math.log(1 + (total - count + 0.5) / (count + 0.5))
            for term, count in frequency.items()
        }

    def get(self, doc_id: str) -> Document | None:
        return self.documents.get(doc_id.strip())

    def score(self, query_terms: list[str], doc_id: str) -> float:
        bag = self._bags[doc_id]
        norm = _K1 * (1 - _B + _B * self._lengths[doc_id] / self._average_length)
        total = 0.0
        for term in set(query_terms):
            count = bag.get(term, 0)
            if count:
                total += self._idf.get(term, 0.0) * count * (_K1 + 1) / (count + norm)
        return total

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        query_terms = terms(query)
        scored = [(self.score(query_terms, doc_id), doc_id) for doc_id in self.documents]
        # Ties break on the id so the ranking, and the demo's script, never depend on dict order.
        ranked = sorted(
            ((score, doc_id) for score, doc_id in scored if score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [
            SearchHit(
                self.documents[doc_id], score, best_sentence(self.documents[doc_id], query_terms)
            )
            for score, doc_id in ranked[:limit]
        ]


def best_sentence(document: Document, query_terms: list[str]) -> str:
    """The document's sentence sharing the most words with the query (the first on ties)."""
    wanted = set(query_terms)
    candidates = sentences(document.text) or [document.title]
    return max(candidates, key=lambda sentence: len(wanted & set(terms(sentence))))


def _render_json(value: dict[str, Any]) -> str:
    """A JSON document as readable text: title, summary, then one line per record."""
    lines = [f"# {value.get('title', '')}".rstrip(), ""]
    if value.get("summary"):
        lines += [str(value["summary"]), ""]
    for key, item in value.items():
        if key in {"title", "summary"}:
            continue
        if isinstance(item, list):
            lines += ["", f"## {key.replace('_', ' ').capitalize()}", ""]
            for row in item:
                if isinstance(row, dict):
                    fields = "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in row.items())
                    lines.append(f"- {fields}")
                else:
                    lines.append(f"- {row}")
        else:
            lines.append(f"- {key.replace('_', ' ')}: {item}")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _read(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return _render_json(json.loads(raw))
    return raw


def load_corpus(directory: Path = CORPUS_DIR, base_url: str | None = None) -> Corpus:
    catalog = json.loads((directory / "catalog.json").read_text(encoding="utf-8"))
    base = (base_url or corpus_url()).rstrip("/")
    documents = [
        Document(
            id=entry["id"],
            title=entry["title"],
            url=f"{base}/{entry['id']}",
            text=_read(directory / entry["file"]),
        )
        for entry in catalog["documents"]
    ]
    return Corpus(documents)


@cache
def default_corpus() -> Corpus:
    """The shipped corpus, read once per process."""
    return load_corpus()
