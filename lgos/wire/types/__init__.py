"""The shapes of what LGOS sends, one module per idea: the Response object and its output
items (`responses`), the Responses stream events (`events`), the items the store keeps and
lists (`items`), and Chat Completions objects and chunks (`chat`).

`TypedDict`s, not Pydantic models (docs/design-choices.md): the type checker holds the
encoders to these shapes, and at run time they are the plain dicts the JSON renderer and the
event logs take, with no validation or copy per event on the streaming path. Field names and
optionality follow the official `openai` SDK's models, which validate them in strict mode.
"""
