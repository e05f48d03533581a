"""A graph's question (`interrupt()`) as an A2A `input-required` status, and the reply back.

The status message says the question in a text part (the question, its other details below
it, then the choices: what a person reads) and carries it in a data part (`reviews`: the review
id, question, choices, whether other answers are allowed, the answer schema: what a program
reads). The task keeps that message, so the reply is read against the questions this server
asked, not against anything the client sends back.

The reply is the next message on the task: its text, or its data part (JSON) for a question
with an answer schema. A paused run with several questions at once takes a data part mapping
each review id to its answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import Message, Part
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value

from lgos.core.json_schema import JsonSchema
from lgos.core.run_events import PendingInterrupt
from lgos.protocols.questions import pending_of_call, question_text
from lgos.wire.interrupts import interrupt_call_id

REVIEWS = "reviews"
# Keys of a question that steer how it is asked, not what it says.


class RefusedReplyError(Exception):
    """The reply does not answer the question: ask again, saying why."""


@dataclass(frozen=True, slots=True)
class Question:
    review_id: str
    text: str
    choices: tuple[str, ...] = ()
    allow_other: bool = True
    answer_schema: JsonSchema | None = None

    def described(self) -> dict[str, Any]:  # a protobuf Struct's JSON (its values are Any)
        return {
            "review_id": self.review_id,
            "question": self.text,
            "choices": list(self.choices),
            "allow_other": self.allow_other,
            "answer_schema": self.answer_schema,
        }

    @classmethod
    def from_described(cls, value: Mapping[str, Any]) -> Question:
        schema = value.get("answer_schema")
        return cls(
            review_id=str(value["review_id"]),
            text=str(value["question"]),
            choices=tuple(str(choice) for choice in value.get("choices") or ()),
            allow_other=bool(value.get("allow_other", True)),
            answer_schema=dict(schema) if isinstance(schema, Mapping) else None,
        )

    def answer(self, reply: str | Any) -> str:
        """The output string for the run. Whether it is one of the choices, or fits the
        answer schema, is for the run to decide (as on the OpenAI routes): the graph may
        take other answers, or refuse with its own reason."""
        if not isinstance(reply, str):
            return json.dumps(reply)
        text = reply.strip()
        if not text:
            raise RefusedReplyError("An answer is needed.")
        return text


def question_for(run_id: str, pending: PendingInterrupt) -> Question:
    value = pending.value
    choices: tuple[str, ...] = ()
    allow_other = True
    if isinstance(value, Mapping):
        raw = value.get("choices")
        if isinstance(raw, list | tuple) and raw:
            choices = tuple(str(choice) for choice in raw)
            allow_other = bool(value.get("allow_other"))
    return Question(
        review_id=interrupt_call_id(run_id, pending.id),
        text=question_text(value),
        choices=choices,
        allow_other=allow_other,
        answer_schema=pending.response_schema,
    )


def question_of_call(call_id: str, arguments: str) -> Question:
    """A paused background Response's `lgos_interrupt` call as its question."""
    return question_for(*pending_of_call(call_id, arguments))


def asking_parts(questions: list[Question], note: str | None) -> list[Part]:
    """The parts of the `input-required` status message."""
    lines = [] if note is None else [note, ""]
    for question in questions:
        lines.append(question.text)
        if question.choices:
            others = " (or your own answer)" if question.allow_other else ""
            lines.append("Choices: " + ", ".join(question.choices) + others)
        if question.answer_schema is not None:
            lines.append("Answer with JSON matching: " + json.dumps(question.answer_schema))
    data = Value()
    data.struct_value.update({REVIEWS: [question.described() for question in questions]})
    return [Part(text="\n".join(lines)), Part(data=data)]


def asked_questions(status_message: Message) -> list[Question]:
    """The questions an `input-required` status message of this server asked."""
    for part in status_message.parts:
        if part.HasField("data"):
            value = MessageToDict(part.data)
            if isinstance(value, dict) and isinstance(value.get(REVIEWS), list):
                return [Question.from_described(item) for item in value[REVIEWS]]
    return []


def answers_from(questions: list[Question], reply: Message) -> dict[str, str]:
    """Review id → output string; RefusedReplyError when the reply answers nothing."""
    data = [MessageToDict(part.data) for part in reply.parts if part.HasField("data")]
    text = "\n".join(part.text for part in reply.parts if part.HasField("text"))
    if len(questions) == 1:
        (question,) = questions
        if data and not text.strip():
            value = data[0]
            keyed = isinstance(value, dict) and question.review_id in value
            return {
                question.review_id: question.answer(value[question.review_id] if keyed else value)
            }
        return {question.review_id: question.answer(text)}
    by_id = next((value for value in data if isinstance(value, dict)), None)
    if by_id is None:
        raise RefusedReplyError(
            "Several questions are waiting: reply with a data part mapping each review_id "
            "to its answer."
        )
    answers: dict[str, str] = {}
    for question in questions:
        if question.review_id not in by_id:
            raise RefusedReplyError(f"No answer for review {question.review_id}.")
        answers[question.review_id] = question.answer(by_id[question.review_id])
    return answers
