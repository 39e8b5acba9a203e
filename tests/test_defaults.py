"""The defaults, pinned here once and on purpose; every other test reads them from their declarations.

`animalstore_client._core.defaults` (and the public ``DEFAULT_*`` names) declares
the client's defaults, and `RetryBudget`'s signature the budget's. A test
that needs a default value reads it from there, so changing a default fails
the one test below, which says what else such a change means.
"""

from __future__ import annotations

import inspect

import httpx

import animalstore_client
from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, RetryBudget
from animalstore_client._core import defaults

from .conftest import API_KEY


def test_the_defaults_are_the_documented_ones() -> None:
    """Pins the default on purpose: every default's value, as the docs and the changelog state them.

    A changed default is a change every caller sees: update this test with the
    CHANGELOG entry that announces it (the docs pages' numbers are checked
    against the declarations by tests/test_docs_examples.py).
    """
    assert httpx.Timeout(30.0, connect=5.0) == defaults.DEFAULT_TIMEOUT
    assert defaults.DEFAULT_MAX_RETRIES == 2
    assert defaults.DEFAULT_TOTAL_TIMEOUT == 120.0
    assert defaults.DEFAULT_MAX_RESPONSE_BYTES == 10 * 1024 * 1024
    assert httpx.Limits(max_connections=1000, max_keepalive_connections=100) == defaults.DEFAULT_LIMITS
    budget = RetryBudget()
    assert (budget.percent, budget.min_per_second, budget.window) == (0.2, 10, 10.0)


def test_a_client_made_without_options_has_the_declared_defaults() -> None:
    """Both clients' defaults are the declared ones, read back from a client made with no option."""
    for client in (AnimalStoreClient(API_KEY), AsyncAnimalStoreClient(API_KEY)):
        assert client.timeout == defaults.DEFAULT_TIMEOUT
        assert client.max_retries == defaults.DEFAULT_MAX_RETRIES
        assert client.total_timeout == defaults.DEFAULT_TOTAL_TIMEOUT
        assert client.max_response_bytes == defaults.DEFAULT_MAX_RESPONSE_BYTES
        assert repr(client.retry_budget) == repr(RetryBudget())
    parameters = inspect.signature(RetryBudget).parameters
    assert {name: parameters[name].default for name in ("percent", "min_per_second", "window")} == {
        "percent": RetryBudget().percent,
        "min_per_second": RetryBudget().min_per_second,
        "window": RetryBudget().window,
    }


def test_the_public_defaults_are_the_declarations() -> None:
    """The package's DEFAULT_* names are the declarations themselves, not copies."""
    for name in ("DEFAULT_TIMEOUT", "DEFAULT_MAX_RETRIES", "DEFAULT_TOTAL_TIMEOUT", "DEFAULT_MAX_RESPONSE_BYTES"):
        assert getattr(animalstore_client, name) is getattr(defaults, name), name
