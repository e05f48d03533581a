"""The foreground suite (`just bench`): server CPU per request of LGOS against a bare
Starlette + LangGraph app and the reference product, each served by its own Uvicorn process."""
