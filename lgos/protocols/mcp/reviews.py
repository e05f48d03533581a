"""A graph's question (`interrupt()`) as an MCP form elicitation, and the form's answer back.

The form is built from what the question offers: its `response_schema` when that is a flat
object (the fields are the form), its `choices` as a pick list (plus a free-text field when
the question allows other answers), else one text field. The answer goes to the run as the
same output string an OpenAI client would send: the picked or typed text, or the fields as
JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import jsonschema

from lgos.core.json_schema import JsonSchema
from lgos.core.run_events import PendingInterrupt
from lgos.protocols.questions import question_text
from lgos.wire.interrupts import interrupt_call_id

ANSWER_FIELD = "answer"
OTHER_FIELD = "other"
# Keys of a question that steer how it is asked, not what it says.
_PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})


class RefusedAnswerError(Exception):
    """The form came back filled in a way the question does not accept: ask again, saying why."""


class QuestionText(TypedDict):
    """A question as a tool result names it, for a client that cannot show its form."""

    review_id: str
    question: str
    choices: NotRequired[list[str]]
    answer_schema: NotRequired[JsonSchema]


@dataclass(frozen=True, slots=True)
class Question:
    """One pending question of a paused run, and the form that asks it."""

    review_id: str
    message: str
    requested_schema: JsonSchema
    # How the form's content becomes the answer: "fields" (the content as JSON), "answer"
    # (the one field), "choice_or_other" (the typed text, else the picked choice).
    mode: str
    choices: tuple[str, ...] = ()

    def answer_from(self, content: Mapping[str, Any] | None) -> str:
        """The output string for the run; RefusedAnswerError when the content does not fit."""
        values = dict(content or {})
        try:
            jsonschema.validate(values, self.requested_schema)
        except jsonschema.ValidationError as error:
            raise RefusedAnswerError(
                f"That answer does not fit the question: {error.message}."
            ) from None
        if self.mode == "fields":
            return json.dumps(values)
        if self.mode == "choice_or_other":
            other = str(values.get(OTHER_FIELD) or "").strip()
            if other:
                return other
            if values.get(ANSWER_FIELD):
                return str(values[ANSWER_FIELD])
            raise RefusedAnswerError("Pick one of the choices or write your own answer.")
        value = values.get(ANSWER_FIELD)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise RefusedAnswerError("An answer is needed.")
        return value if isinstance(value, str) else json.dumps(value)

    def describe(self) -> QuestionText:
        """The question for a client that cannot show the form (a tool result)."""
        described: QuestionText = {"review_id": self.review_id, "question": self.message}
        if self.choices:
            described["choices"] = list(self.choices)
        if self.mode == "fields":
            described["answer_schema"] = self.requested_schema
        return described


def question_for(run_id: str, pending: PendingInterrupt) -> Question:
    value = pending.value
    review_id = interrupt_call_id(run_id, pending.id)
    message = question_text(value)
    fields = _flat_form(pending.response_schema)
    if fields is not None:
        return Question(review_id, message, fields, "fields")
    raw_choices = value.get("choices") if isinstance(value, Mapping) else None
    choices = (
        tuple(str(choice) for choice in raw_choices)
        if isinstance(raw_choices, list | tuple) and raw_choices
        else ()
    )
    if choices:
        pick = {"type": "string", "title": "Answer", "enum": list(choices)}
        if isinstance(value, Mapping) and value.get("allow_other"):
            schema = {
                "type": "object",
                "properties": {
                    ANSWER_FIELD: pick,
                    OTHER_FIELD: {"type": "string", "title": "Or your own answer"},
                },
            }
            return Question(review_id, message, schema, "choice_or_other", choices)
        schema = {"type": "object", "properties": {ANSWER_FIELD: pick}, "required": [ANSWER_FIELD]}
        return Question(review_id, message, schema, "answer", choices)
    field: JsonSchema = {"type": "string", "title": "Answer"}
    if pending.response_schema is not None:
        # Not a form (nested, or not an object): the answer is JSON matching it.
        field["description"] = "JSON matching: " + json.dumps(pending.response_schema)
    schema = {"type": "object", "properties": {ANSWER_FIELD: field}, "required": [ANSWER_FIELD]}
    return Question(review_id, message, schema, "answer")


def _flat_form(schema: JsonSchema | None) -> JsonSchema | None:
    """The response schema as a form, when every field is a primitive (what forms can show)."""
    if not schema or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return None
    form: dict[str, JsonSchema] = {}
    for name, field in properties.items():
        if not isinstance(field, Mapping) or field.get("type") not in _PRIMITIVE_TYPES:
            return None
        kept = {
            key: field[key]
            for key in ("type", "title", "description", "enum", "minimum", "maximum", "default")
            if key in field
        }
        form[str(name)] = kept
    required = [name for name in schema.get("required", []) if name in form]
    return {"type": "object", "properties": form, "required": required}


def waiting_text(model: str, questions: list[Question]) -> str:
    """What a client without forms is told: the review waits, and how to answer it."""
    lines = [f"A review is waiting before '{model}' can go on."]
    for question in questions:
        lines.append(f"Question: {question.message}")
        if question.choices:
            lines.append("Choices: " + ", ".join(question.choices))
        if question.mode == "fields":
            lines.append("Answer with JSON matching: " + json.dumps(question.requested_schema))
        # "this tool": behind a gateway the tool has another name (LiteLLM prefixes it).
        lines.append(
            "To answer, call this tool again with "
            + json.dumps({"review_id": question.review_id, "answer": "<your answer>"})
        )
    return "\n".join(lines)
