"""The package version, read by ``pyproject.toml`` (hatch) and ``__init__``."""

__version__ = "2.0.0"
"""The version of animalstore-client this is."""
