"""The Responses decoder's plain path (a text input and only settings no check of the decoder
reads) decodes every body it takes exactly as the whole decoder does, and leaves the rest to it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from lgos.core.errors import InvalidRequestError
from lgos.wire import responses_decoder
from lgos.wire.responses_decoder import ResponsesBody

pytestmark = pytest.mark.timeout(60)

# Each plain field a request may add to its model and text input, with the values to try.
PLAIN_OPTIONS: dict[str, list[Any]] = {
    "stream": [True, False, None],
    "store": [True, False, None],
    "metadata": [{}, {"team": "blue", "ticket": "42"}, None],
    "user": ["user-1", None],
    "instructions": ["Answer briefly.", None],
    "previous_response_id": ["resp_0123", None],
}


def plain_bodies() -> Iterator[dict[str, Any]]:
    """Every combination of the plain fields, each absent or with each of its values."""
    names = list(PLAIN_OPTIONS)
    for chosen in itertools.product(*([*PLAIN_OPTIONS[name], "absent"] for name in names)):
        body: dict[str, Any] = {"model": "echo", "input": "Say hello."}
        body.update(
            {name: value for name, value in zip(names, chosen, strict=True) if value != "absent"}
        )
        yield body


def test_every_plain_body_decodes_as_the_whole_decoder_decodes_it() -> None:
    bodies = list(plain_bodies())
    assert len(bodies) == 4 * 4 * 4 * 3 * 3 * 3
    for data in bodies:
        whole = responses_decoder._decoded(ResponsesBody.model_validate(data), data)
        assert responses_decoder.decode(data) == whole, data


def test_a_plain_body_is_still_held_to_the_metadata_limits() -> None:
    data = {"model": "echo", "input": "Say hello.", "metadata": {f"k{n}": "v" for n in range(17)}}
    with pytest.raises(InvalidRequestError) as raised:
        responses_decoder.decode(data)
    assert raised.value.code == "object_above_max_properties"


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"background": True, "store": False}, "invalid_value"),
        ({"temperature": 0.2}, "unsupported_parameter"),
        ({"tool_choice": "required"}, "invalid_value"),
        ({"include": ["message.output_text.logprobs"]}, "unsupported_value"),
    ],
)
def test_a_body_with_any_other_field_takes_the_whole_decoders_checks(
    extra: dict[str, Any], code: str
) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        responses_decoder.decode({"model": "echo", "input": "Say hello.", **extra})
    assert raised.value.code == code
