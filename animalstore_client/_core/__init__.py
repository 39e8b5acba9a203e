"""The sans-IO core: models, parsing, checks, errors, the retry and deadline rules; no HTTP library is driven here.

Imports only the standard library, httpx's types (the core's request and response model), attrs and cattrs."""
