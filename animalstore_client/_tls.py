"""Trust settings: the ``verify=`` argument, and the one way every backend turns it into an `ssl.SSLContext`.

Each HTTP library has its own idea of which certificates to trust (httpx:
certifi's bundle; aiohttp and urllib3: the operating system's store), so the
SDK builds the context itself and hands the same kind to every library:

- ``True``: certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when
  set (as httpx reads them), so a corporate CA set in the environment works on
  every backend alike;
- a path: that CA bundle file, or a directory of hashed CA files;
- an `ssl.SSLContext`: used as it is (say, one from ``truststore`` for the
  operating system's store);
- ``False``: no certificate check at all, for a local test server.

A failed certificate check is told apart from other connection failures by
`certificate_failure`, so that it is reported as such and never retried.
"""

from __future__ import annotations

import os
import ssl
from typing import Union, cast

from ._exceptions import ClientValidationError
from ._validation import show

__all__ = ["Verify", "certificate_failure", "check_verify", "ssl_context"]

Verify = Union[bool, str, "os.PathLike[str]", ssl.SSLContext]
"""What ``verify=`` takes: ``True``, ``False``, a CA bundle path, or an `ssl.SSLContext`."""

_RULE = "True, False, the path of a CA bundle file or directory, or an ssl.SSLContext"


def check_verify(verify: object) -> bool | str | ssl.SSLContext:
    """``verify``, checked: a path must name an existing file or directory."""
    if isinstance(verify, (bool, ssl.SSLContext)):
        return verify
    if isinstance(verify, (str, os.PathLike)):
        given = cast("os.PathLike[str] | str", verify)
        try:
            path: object = os.fspath(given)
        except TypeError:  # a PathLike that gives no path
            path = None
        if isinstance(path, str) and "\x00" not in path and os.path.exists(path):
            return path
        raise ClientValidationError(
            f"verify must be {_RULE}; no file or directory is at {show(given)}",
            argument="verify",
            rule=_RULE,
            value=given,
        )
    raise ClientValidationError(
        f"verify must be {_RULE}, got {show(verify)}", argument="verify", rule=_RULE, value=verify
    )


def ssl_context(verify: bool | str | ssl.SSLContext) -> ssl.SSLContext:
    """A new context for one connection pool (a caller's context is returned as it is).

    A pool gets a context of its own: libraries set options on the context
    they are given (httpcore its ALPN protocols, urllib3 its verify mode), so
    two pools never write to one object.
    """
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    cafile: str | None = None
    capath: str | None = None
    if verify is True:
        cafile = os.environ.get("SSL_CERT_FILE") or None
        capath = os.environ.get("SSL_CERT_DIR") or None
        if cafile is not None and not os.path.isfile(cafile):
            cafile = None
        if capath is not None and not os.path.isdir(capath):
            capath = None
        if cafile is None and capath is None:
            import certifi  # httpx's own dependency: the bundle httpx trusts by default

            cafile = certifi.where()
    elif os.path.isdir(verify):
        capath = verify
    else:
        cafile = verify
    return ssl.create_default_context(cafile=cafile, capath=capath)


_MAX_CHAIN = 16


def certificate_failure(exc: BaseException) -> str | None:
    """Why a certificate was refused, if ``exc`` (or what it wraps) is a failed certificate check.

    Libraries wrap the `ssl.SSLCertVerificationError` differently (httpx as
    a cause, urllib3 as an argument, aiohttp as an attribute), so the chain
    is searched through all three, a bounded number of steps.
    """
    seen: list[BaseException] = [exc]
    index = 0
    while index < len(seen) and len(seen) < _MAX_CHAIN:
        current = seen[index]
        index += 1
        if isinstance(current, ssl.SSLCertVerificationError):
            # aiohttp's own error subclasses it without its attributes: look inside that one.
            message = getattr(current, "verify_message", None)
            if message is not None or getattr(current, "certificate_error", None) is None:
                return str(message or getattr(current, "reason", None) or current)
        linked = [current.__cause__, current.__context__, getattr(current, "certificate_error", None)]
        linked.extend(current.args)
        for item in linked:
            if isinstance(item, BaseException) and all(item is not other for other in seen):
                seen.append(item)
    return None
