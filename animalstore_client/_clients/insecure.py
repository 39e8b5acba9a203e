"""Warnings about a key that could be read on the way: plain ``http://`` off loopback, or ``verify=False``."""

from __future__ import annotations

import warnings

import httpx

from animalstore_client._transports.proxies import environment_proxy

__all__ = ["InsecureTransportWarning", "warn_if_insecure", "warn_if_unverified"]


class InsecureTransportWarning(UserWarning):
    """The API key could be read on the way: plain ``http://``, or ``verify=False``, to a host that is not loopback.

    The bearer key would cross the network in clear text, or to a server
    whose certificate nobody checked. Use ``https://`` with certificate
    checks; both are silent only for ``localhost``, ``127.0.0.0/8`` and ``::1``.
    """


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress  # only for plain-http URLs; keeps the import light

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def warn_if_insecure(base_url: str, stacklevel: int, *, env_proxies: bool = True) -> None:
    url = httpx.URL(base_url)
    if url.scheme != "http":
        return
    if not _is_loopback(url.host):
        message = (
            f"base_url {base_url!r} is plain http:// to a non-loopback host: the API key would be "
            "sent in clear text. Use https://."
        )
    elif (proxy := environment_proxy(url) if env_proxies else None) is not None and not _is_loopback(proxy.host):
        message = (
            f"base_url {base_url!r} is plain http:// and the environment's proxy settings send it "
            f"through the proxy {proxy.host!r}: the API key would reach that proxy in clear text. "
            "Use https://, or add the host to NO_PROXY."
        )
    else:
        return
    warnings.warn(message, InsecureTransportWarning, stacklevel=stacklevel + 1)


def warn_if_unverified(base_url: str, verify: object, stacklevel: int) -> None:
    if verify is not False:
        return
    url = httpx.URL(base_url)
    if url.scheme == "https" and not _is_loopback(url.host):
        warnings.warn(
            f"verify=False: certificates are not checked for {url.host!r}, so anyone on the path can read "
            "the API key and the answers. Use verify='/path/to/ca-bundle.pem' for a private CA.",
            InsecureTransportWarning,
            stacklevel=stacklevel + 1,
        )
