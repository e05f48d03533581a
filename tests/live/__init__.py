"""Live suites: the demo stack over real HTTP, direct and through gateways."""
