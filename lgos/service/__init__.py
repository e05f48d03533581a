"""Between the wire and the runner: builds graph requests, picks how to run them, and hands the
events to an encoder. Used by the HTTP routes and by background workers alike."""
