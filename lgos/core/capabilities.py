"""What a request asks of its graph beyond text, and the 400 when the graph cannot give it.

The decoders know which parts of a request only some graphs take (a JSON schema for the answer,
an image, a hosted tool); the registry knows what each graph declared. This module brings the
two together, so the refusal names the graph and the exact field.
"""

from __future__ import annotations

from dataclasses import dataclass

from lgos.core.errors import InvalidRequestError
from lgos.core.registry import GraphConfig, GraphFeature


@dataclass(frozen=True, slots=True)
class Demand:
    """One part of a request that needs `feature` declared by the graph."""

    feature: GraphFeature
    # Where the part is (`text.format`, `input[0].content[1].type`) and what to call it.
    param: str
    what: str
    code: str = "unsupported_parameter"


def check_demands(model: str, config: GraphConfig, demands: tuple[Demand, ...]) -> None:
    for demand in demands:
        if not config.supports(demand.feature):
            raise InvalidRequestError(
                f"Invalid '{demand.param}': the model '{model}' does not take {demand.what} "
                f"(it does not declare the '{demand.feature}' feature).",
                param=demand.param,
                code=demand.code,
            )
