"""The seam between the send loop and an HTTP library, and one module per library behind it.

Imports only the core (and, in each library's module, that library): never the clients."""
