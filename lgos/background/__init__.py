"""Background Responses: the engine protocol, the in-memory engine, the job executor."""
