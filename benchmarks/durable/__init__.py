"""The durable suite (`just bench-durable`): background runs, review round trips and stream
tails on each engine, beside the engines and LangGraph doing the same work alone."""
