"""Trust settings: the ``verify=`` argument, and the one way every backend turns it into an `ssl.SSLContext`.

Each HTTP library has its own idea of which certificates to trust (httpx:
certifi's bundle; aiohttp: the operating system's store), so the SDK builds
the context itself and hands the same kind to every library. A failed
certificate check is told apart by `certificate_failure`, and never retried.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import cast

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.show import show

__all__ = ["certificate_failure", "check_verify", "ssl_context"]

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
    """The context a client's own connection pools use (a caller's context is returned as it is).

    Built once per client, when it is created, so that a CA file that is not
    one is a `ClientValidationError` then, not a failure inside a later call
    (after a fork, or in a new event loop, the client makes new pools with
    the same context). ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` are read here,
    as httpx reads them, except that both apply when both are set; one that
    names nothing usable is an error naming the variable, never silently
    replaced by certifi's bundle.
    """
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        return _trusting(None, None, check=False)
    cafile: str | None = None
    capath: str | None = None
    source = "verify"
    if verify is True:
        cafile = os.environ.get("SSL_CERT_FILE") or None
        capath = os.environ.get("SSL_CERT_DIR") or None
        # A file fails as it is loaded, a directory only when a certificate is looked up in it.
        source = "SSL_CERT_FILE" if cafile is not None else "SSL_CERT_DIR"
        if cafile is None and capath is None:
            import certifi  # httpx's own dependency: the bundle httpx trusts by default

            cafile = certifi.where()
            source = "certifi's bundle"
    elif os.path.isdir(verify):
        capath = verify
    else:
        cafile = verify
    try:
        return _trusting(cafile, capath)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: not PEM, no certificate in it, missing
        argument = "verify" if source in ("verify", "certifi's bundle") else source
        raise ClientValidationError(
            f"{source} must name a readable CA bundle (PEM) file or a directory of CA files; "
            f"{show(cafile or capath)} could not be loaded: {exc}",
            argument=argument,
            rule="a readable CA bundle file or directory",
            value=cafile or capath,
        ) from None


_contexts: dict[tuple[object, ...], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def _signature(path: str | None) -> tuple[object, ...]:
    if path is None:
        return ()
    try:
        found = os.stat(path)
    except OSError:
        return (path,)  # loading it fails below, with the error to show
    return (path, found.st_mtime_ns, found.st_size, found.st_ino)


def _trusting(cafile: str | None, capath: str | None, *, check: bool = True) -> ssl.SSLContext:
    """A context trusting these CAs, made once per process for each bundle as it is on disk.

    Loading certifi's bundle takes ~16 ms, nine tenths of making a client;
    clients (and clients loaded from a pickle in a worker) trusting the same
    bundle share one context, which OpenSSL allows across threads. A bundle
    changed on disk (its size, time or inode) gets a new context.
    """
    key = (check, *_signature(cafile), None, *_signature(capath))
    context = _contexts.get(key)
    if context is None:
        with _contexts_lock:
            context = _contexts.get(key)
            if context is None:
                context = ssl.create_default_context(cafile=cafile, capath=capath)
                if not check:
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                _contexts[key] = context
    return context


_MAX_CHAIN = 16


def certificate_failure(exc: BaseException) -> str | None:
    """Why a certificate was refused, if ``exc`` (or what it wraps) is a failed certificate check.

    Libraries wrap the `ssl.SSLCertVerificationError` differently (httpx as
    a cause, others as an argument, aiohttp as an attribute), so the chain
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
