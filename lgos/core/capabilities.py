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


@dataclass(frozen=True, slots=True)
class HostedToolDemand:
    """A hosted tool (`web_search`, ...) in the request: the graph must run that type itself."""

    tool_type: str
    param: str


def check_demands(
    model: str, config: GraphConfig, demands: tuple[Demand | HostedToolDemand, ...]
) -> None:
    for demand in demands:
        if isinstance(demand, HostedToolDemand):
            if demand.tool_type not in config.hosted_tools:
                runs = ", ".join(f"'{kind}'" for kind in sorted(config.hosted_tools)) or "none"
                raise InvalidRequestError(
                    f"Invalid '{demand.param}': '{demand.tool_type}' tools are not supported "
                    f"by the model '{model}', which runs only client function tools and these "
                    f"hosted tool types: {runs}.",
                    param=demand.param,
                    code="unsupported_value",
                )
        elif not config.supports(demand.feature):
            raise InvalidRequestError(
                f"Invalid '{demand.param}': the model '{model}' does not take {demand.what} "
                f"(it does not declare the '{demand.feature}' feature).",
                param=demand.param,
                code=demand.code,
            )
