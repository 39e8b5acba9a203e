"""The ``animalstore_client`` logger and the ``ANIMALSTORE_LOG`` switch.

The library adds no handler unless ``ANIMALSTORE_LOG`` asks for one. Records
hold the method, URL, status, elapsed time, retry number and delay; never a
header, so the ``Authorization`` header and the key cannot reach a log.
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings
from collections.abc import Mapping

LOG_VARIABLE = "ANIMALSTORE_LOG"
logger = logging.getLogger("animalstore_client")

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}
_warned: set[str] = set()
_lock = threading.Lock()


class _EnvHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler ``ANIMALSTORE_LOG`` adds; marked so it is added once."""


def configure_from_env(env: Mapping[str, str]) -> None:
    """Add a stderr handler at the level ``ANIMALSTORE_LOG`` names, once; warn once about any other value."""
    value = env.get(LOG_VARIABLE, "").strip().lower()
    if not value:
        return
    level = _LEVELS.get(value)
    if level is None:
        # An observability setting must not take an application down at start-up:
        # a typo is reported once per value and otherwise ignored.
        with _lock:
            if value in _warned:
                return
            _warned.add(value)
        warnings.warn(
            f"{LOG_VARIABLE} must be 'debug' or 'info' (or unset), got {value!r}: ignored, no handler added",
            UserWarning,
            stacklevel=4,
        )
        return
    logger.setLevel(level)
    if not any(isinstance(handler, _EnvHandler) for handler in logger.handlers):
        handler = _EnvHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
