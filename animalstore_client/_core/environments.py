"""The service's environments and how the base URL is chosen.

The two base URLs are written here and nowhere else.
"""

from __future__ import annotations

import enum
import socket
from collections.abc import Mapping

import httpx

from animalstore_client._core.exceptions import ClientValidationError
from animalstore_client._core.secrets import has_userinfo, redact_url
from animalstore_client._core.show import show

__all__ = ["Environment", "resolve_base_url"]

API_KEY_VARIABLE = "ANIMALSTORE_API_KEY"
BASE_URL_VARIABLE = "ANIMALSTORE_BASE_URL"
ENVIRONMENT_VARIABLE = "ANIMALSTORE_ENVIRONMENT"


class Environment(str, enum.Enum):
    """A deployment of the animal store service.

    ```python
    client = AnimalStoreClient(environment=Environment.STAGING)
    assert client.base_url == Environment.STAGING.base_url
    ```
    """

    PRODUCTION = "production"
    """``"production"``: the live service, ``https://api.animalstore.example/v1``; the default."""
    STAGING = "staging"
    """``"staging"``: for trying changes, ``https://staging.api.animalstore.example/v1``; it needs a staging key."""

    @property
    def base_url(self) -> str:
        """The base URL of this environment; it ends in ``/v1``."""
        return _BASE_URLS[self]

    def __str__(self) -> str:
        # str-mixin enums print as "Environment.STAGING" before 3.12; the
        # value is what users type and what the variable holds.
        return self.value


# The service has not published its hostnames yet; these are placeholders on
# the reserved .example domain, so nothing can leak to a real host by accident.
_BASE_URLS: dict[Environment, str] = {
    Environment.PRODUCTION: "https://api.animalstore.example/v1",
    Environment.STAGING: "https://staging.api.animalstore.example/v1",
}
PLACEHOLDER_HOSTS = frozenset({"api.animalstore.example", "staging.api.animalstore.example"})
"""The built-in hosts: on the reserved ``.example`` domain, so no name server knows them."""


def placeholder_note(host: str) -> str | None:
    """What to say when a call to a built-in placeholder host could not connect; ``None`` for any other host."""
    if host not in PLACEHOLDER_HOSTS:
        return None
    return (
        f"{host} is a placeholder (the service has not published its host names): set {BASE_URL_VARIABLE} "
        "or base_url= to your deployment's URL, e.g. https://animals.internal.example/v1"
    )


_MAX_CHAIN = 16
"""Most exceptions of a cause chain looked at."""


def name_not_resolved(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to resolve the host name (DNS), as any backend reports one.

    The transports keep the library's exception as ``__cause__``: a `socket.gaierror` is somewhere
    in the chain (httpx, aiohttp's threaded resolver; the aiohttp and pyreqwest transports
    put one there for aiohttp's ``ClientConnectorDNSError`` and reqwest's "dns error"). A failure
    raised without one (a mock's ``httpx.ConnectError``) is not.
    """
    seen: list[BaseException] = [exc]
    index = 0
    while index < len(seen) and index < _MAX_CHAIN:
        current = seen[index]
        index += 1
        if isinstance(current, socket.gaierror):
            return True
        for linked in (current.__cause__, current.__context__):
            if linked is not None and all(linked is not other for other in seen):
                seen.append(linked)
    return False


def placeholder_failure(exc: BaseException, host: str) -> str | None:
    """The placeholder note for a call that failed because ``host``, a built-in placeholder, does not resolve.

    Only a failure to resolve the name says the host is a placeholder, and is not retried (no name
    server knows a ``.example`` name); any other failure to connect to it is one like any host's.
    """
    note = placeholder_note(host)
    return note if note is not None and name_not_resolved(exc) else None


_ALLOWED = ", ".join(repr(e.value) for e in Environment)


def parse_environment(value: object, *, argument: str) -> Environment:
    """Return the `Environment` named by ``value`` or raise `ClientValidationError`."""
    if isinstance(value, Environment):
        return value
    if isinstance(value, str):
        try:
            return Environment(value)
        except ValueError:
            pass
    # A variable holds text: an Environment member is only something an argument can be.
    choices = _ALLOWED if argument == ENVIRONMENT_VARIABLE else f"{_ALLOWED} or an Environment member"
    raise ClientValidationError(
        f"{argument} must be one of {choices}, got {show(value)}",
        argument=argument,
        rule=f"one of {_ALLOWED}",
        value=value,
    )


def normalize_base_url(value: object, *, argument: str) -> str:
    """Check an explicit base URL and return it without a trailing slash."""
    if not isinstance(value, str):
        raise ClientValidationError(
            f"{argument} must be a str such as 'https://host/v1', got {show(value)}",
            argument=argument,
            rule="an http:// or https:// URL",
            value=value,
        )
    # Echoed in the message and kept on the exception with its credentials masked
    # (user:password@, and secret-looking query values).
    shown = redact_url(value)

    def refused(must: str, rule: str = "an http:// or https:// URL") -> ClientValidationError:
        return ClientValidationError(f"{argument} must {must}{show(shown)}", argument=argument, rule=rule, value=shown)

    if has_userinfo(value):
        # Basic auth would replace the bearer key, and the password would show
        # in reprs, errors, pickles and logs.
        raise refused(
            "not hold credentials (user:password@): the API key is the only credential, passed as api_key=; got ",
            "no user:password@ in the URL",
        )
    url = value.strip().rstrip("/")
    if not url.isprintable():
        raise refused("be a URL of printable characters, got ")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or rest[0] == "/":
        raise refused("be an absolute http:// or https:// URL such as 'https://host/v1', got ")
    try:
        parsed = httpx.URL(url)
        url.encode("utf-8")
    except (httpx.InvalidURL, ValueError):  # ValueError: UnicodeError from IDNA or a lone surrogate
        parsed = None
    if parsed is None or not parsed.host or " " in url:
        raise refused("be a valid URL such as 'https://host/v1', got ")
    if "?" in url or "#" in url:
        raise refused("not contain a query or fragment, got ", "no query or fragment")
    return url


def resolve_base_url(
    *,
    base_url: str | None,
    environment: Environment | str | None,
    env: Mapping[str, str],
) -> str:
    """Pick the base URL; the first of these that is set wins.

    The ``base_url`` argument, the ``environment`` argument, the
    ``ANIMALSTORE_BASE_URL`` variable, the ``ANIMALSTORE_ENVIRONMENT``
    variable, and finally production. An empty variable counts as unset.
    """
    if base_url is not None:
        return normalize_base_url(base_url, argument="base_url")
    if environment is not None:
        return parse_environment(environment, argument="environment").base_url
    from_env = env.get(BASE_URL_VARIABLE, "").strip()
    if from_env:
        return normalize_base_url(from_env, argument=BASE_URL_VARIABLE)
    named = env.get(ENVIRONMENT_VARIABLE, "").strip()
    if named:
        return parse_environment(named, argument=ENVIRONMENT_VARIABLE).base_url
    return Environment.PRODUCTION.base_url
