"""The SDK's own connection pool and network backends, over httpcore's public connection class.

The default backend's transport lives here; the httpx2 backend's is the same code, generated over httpcore2."""
