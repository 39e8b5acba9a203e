"""The two clients, their send loop, their options, the choice of HTTP library, and telemetry.

Imports the transports and the core, never the testing kit."""
