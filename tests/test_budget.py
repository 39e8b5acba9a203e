"""The retry budget: retries add at most a share of recent calls, counted on an injected clock."""

from __future__ import annotations

import asyncio
import copy
import logging
import pickle
import threading

import pytest

from animalstore_client import (
    DEFAULT_MAX_RETRIES,
    AnimalStoreClient,
    APIConnectionError,
    ClientValidationError,
    InternalServerError,
    RetryBudget,
)
from animalstore_client.testing import FakeAnimalStore

from .conftest import ALL_VARIANTS, API_KEY, ClientFactory


def test_a_quiet_client_has_the_floor() -> None:
    """With no calls counted, min_per_second x window retries are allowed, and then no more."""
    budget = RetryBudget(percent=0.2, min_per_second=1, window=10)
    assert [budget.try_withdraw(0.0) for _ in range(11)] == [True] * 10 + [False]


def test_calls_add_a_share_of_a_retry_each() -> None:
    """Each call deposits percent of a retry: 50 calls at 20 % allow 10 retries above a zero floor."""
    budget = RetryBudget(percent=0.2, min_per_second=0, window=10)
    for _ in range(50):
        budget.deposit(1.0)
    assert sum(budget.try_withdraw(1.0) for _ in range(20)) == 10


def test_calls_and_retries_are_forgotten_after_the_window() -> None:
    """After window seconds the counts are gone: the floor is back, the old calls' share is not."""
    budget = RetryBudget(percent=1.0, min_per_second=0.1, window=10)
    for _ in range(5):
        budget.deposit(0.0)
    assert sum(budget.try_withdraw(0.5) for _ in range(10)) == 6  # 5 calls x 100 % + the floor of 1
    assert not budget.try_withdraw(9.0)  # still within the window
    assert budget.try_withdraw(10.6)  # the calls and retries of t < 1 are out of it
    assert not budget.try_withdraw(10.6)


def test_a_clock_that_goes_back_does_not_break_the_count() -> None:
    """A time before the newest one counts in the newest slice: no exception, no free retries."""
    budget = RetryBudget(percent=0, min_per_second=0.1, window=10)
    assert budget.try_withdraw(100.0)
    assert not budget.try_withdraw(50.0)


def test_threads_never_withdraw_more_than_allowed() -> None:
    """16 threads withdrawing at once take exactly the allowance, no more (the lock is where they meet)."""
    budget = RetryBudget(percent=0, min_per_second=100, window=10)  # 1,000 retries
    taken: list[int] = []
    barrier = threading.Barrier(16)

    def worker() -> None:
        barrier.wait(timeout=10)
        taken.append(sum(budget.try_withdraw(1.0) for _ in range(200)))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sum(taken) == 1000


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"percent": -0.1}, "percent"),
        ({"percent": 11}, "percent"),
        ({"percent": float("nan")}, "percent"),
        ({"percent": True}, "percent"),
        ({"min_per_second": -1}, "min_per_second"),
        ({"min_per_second": "10"}, "min_per_second"),
        ({"window": 0.5}, "window"),
        ({"window": float("inf")}, "window"),
    ],
)
def test_bad_numbers_are_refused_naming_the_argument(arguments: dict[str, object], argument: str) -> None:
    """Each setting is checked: the error names it, its range and the value."""
    with pytest.raises(ClientValidationError, match=argument) as caught:
        RetryBudget(**arguments)  # type: ignore[arg-type]
    assert caught.value.argument == argument


@pytest.mark.parametrize("argument", ["percent", "min_per_second", "window"])
@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), 10**5000, float("inf"), float("-inf"), float("nan"), 1e308],
    ids=["10**400", "-10**400", "10**5000", "inf", "-inf", "nan", "1e308"],
)
def test_huge_and_non_finite_numbers_are_refused_naming_argument_rule_and_value(argument: str, value: object) -> None:
    """10**400 once raised OverflowError: every setting refuses a huge or non-finite value with the SDK's error."""
    with pytest.raises(ClientValidationError) as caught:
        RetryBudget(**{argument: value})  # type: ignore[arg-type]
    error = caught.value
    assert error.argument == argument
    assert error.value is value
    assert error.rule is not None
    assert "finite number from" in error.rule
    assert str(error).startswith(f"{argument} must be {error.rule}")
    assert "got " in str(error)
    assert len(str(error)) < 300  # a 5,000-digit int is summarised, not printed


def test_the_bounds_themselves_are_accepted() -> None:
    """The documented ranges are inclusive: percent 0 to 10, min_per_second 0 to 10,000, window 1 to 600."""
    widest = RetryBudget(percent=10, min_per_second=10_000, window=600)
    assert (widest.percent, widest.min_per_second, widest.window) == (10.0, 10_000.0, 600.0)
    narrowest = RetryBudget(percent=0, min_per_second=0, window=1)
    assert (narrowest.percent, narrowest.min_per_second, narrowest.window) == (0.0, 0.0, 1.0)
    assert not narrowest.try_withdraw(0.0)


@pytest.mark.parametrize(
    "now",
    [float("nan"), float("inf"), float("-inf"), 10**400, "1", None],
    ids=["nan", "inf", "-inf", "10**400", "str", "None"],
)
def test_a_time_that_is_not_a_finite_number_is_refused_and_changes_nothing(now: object) -> None:
    """deposit and try_withdraw raise ClientValidationError for nan, inf or a huge int, and the counts stay."""
    budget = RetryBudget(percent=0, min_per_second=0.1, window=10)
    for method in (budget.deposit, budget.try_withdraw):
        with pytest.raises(ClientValidationError, match="now must be a finite number of seconds") as caught:
            method(now)  # type: ignore[arg-type]
        assert caught.value.argument == "now"
    assert budget.try_withdraw(1.0)  # the one retry of the floor is still there
    assert not budget.try_withdraw(1.0)


def test_a_budget_pickles_as_its_settings() -> None:
    """A pickled or copied budget has the same settings and counts of its own (a new process's calls)."""
    budget = RetryBudget(percent=0.5, min_per_second=2, window=30)
    budget.try_withdraw(0.0)
    for clone in (pickle.loads(pickle.dumps(budget)), copy.deepcopy(budget)):
        assert repr(clone) == repr(budget) == "RetryBudget(percent=0.5, min_per_second=2, window=30)"
        assert clone is not budget
        assert sum(clone.try_withdraw(0.0) for _ in range(100)) == 60


def test_each_client_gets_its_own_budget_shared_by_its_copies() -> None:
    """Left out, retry_budget is a new RetryBudget(); with_options copies share it unless given another."""
    client = AnimalStoreClient(API_KEY)
    other = AnimalStoreClient(API_KEY)
    assert isinstance(client.retry_budget, RetryBudget)
    assert repr(client.retry_budget) == repr(RetryBudget())  # the defaults, as declared
    assert client.retry_budget is not other.retry_budget
    assert client.with_options(max_retries=5).retry_budget is client.retry_budget
    assert client.with_options(retry_budget=None).retry_budget is None
    shared = RetryBudget()
    assert client.with_options(retry_budget=shared).retry_budget is shared
    with pytest.raises(ClientValidationError, match="retry_budget must be a RetryBudget") as caught:
        AnimalStoreClient(API_KEY, retry_budget=0.2)  # type: ignore[arg-type]
    assert caught.value.argument == "retry_budget"


def test_an_outage_costs_at_most_the_default_budgets_share_more_attempts() -> None:
    """1,000 calls within a second against a store answering 503: at most 1,000 x (1 + percent) + the floor's
    min_per_second x window attempts, with the default budget (a fifth more, plus 100).

    ``Retry-After: 0`` keeps the store's clock still, as 1,000 calls from
    many threads within one second would; without the budget they make 1,000 x (1 + max_retries).
    """
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=10_000, retry_after=0)
    client = store.client()
    budget = RetryBudget()  # the default, as declared
    assert client.max_retries * 1000 > 1000 * budget.percent + budget.min_per_second * budget.window  # it bites
    errors = []
    for _ in range(1000):
        with pytest.raises(InternalServerError) as caught:
            client.list_pets()
        errors.append(caught.value)
    attempts = sum(error.attempts for error in errors)
    assert attempts == len(store.requests)
    assert attempts <= 1000 * (1 + budget.percent) + budget.min_per_second * budget.window
    assert "retry budget is exhausted" in str(errors[-1])


def test_without_a_budget_every_call_retries_in_full() -> None:
    """retry_budget=None: each of 200 failing calls at once makes 1 + max_retries attempts."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=10_000, retry_after=0)
    client = store.client(retry_budget=None)
    for _ in range(200):
        with pytest.raises(InternalServerError):
            client.list_pets()
    assert len(store.requests) == 200 * (1 + DEFAULT_MAX_RETRIES)


def test_a_refused_retry_never_waits_for_retry_after(caplog: pytest.LogCaptureFixture) -> None:
    """Once the budget refuses, a 503 with Retry-After: 30 ends the call at once, and the refusal is logged."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=2, retry_after=0)
    store.fail_next(503, times=3, retry_after=30)
    client = store.client(retry_budget=RetryBudget(percent=0, min_per_second=0.1, window=10))  # one retry in all
    with pytest.raises(InternalServerError) as first:
        client.list_pets()
    assert first.value.attempts == 2  # the one retry: 503, retry, 503, refused
    with (
        caplog.at_level(logging.INFO, logger="animalstore_client"),
        pytest.raises(InternalServerError, match="retry budget is exhausted") as second,
    ):
        client.list_pets()
    assert second.value.attempts == 1
    assert store.retry_delays == [0.0]  # the one retry's; the 30 s one was never slept
    assert any("the retry budget is exhausted" in record.getMessage() for record in caplog.records)


def test_the_budget_counts_in_the_stores_clock() -> None:
    """Kit clients' budgets read the store's clock: advancing it 10 s gives the floor back at once."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=10_000)
    client = store.client(max_retries=1, retry_budget=RetryBudget(percent=0, min_per_second=1, window=10))
    attempts = []
    for _ in range(12):
        with pytest.raises(InternalServerError) as caught:
            client.list_pets()
        attempts.append(caught.value.attempts)
    assert attempts == [2] * 10 + [1, 1]
    assert store.clock() == pytest.approx(10 * 0.5)  # ten 0.5 s backoffs, slept on the store's clock
    store.advance(10)
    with pytest.raises(InternalServerError) as caught:
        client.list_pets()
    assert caught.value.attempts == 2


def test_a_refused_connection_retry_says_so() -> None:
    """A refused connection the budget will not retry: APIConnectionError whose message names the budget."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next_connection("refused", times=10)
    client = store.client(retry_budget=RetryBudget(percent=0, min_per_second=0, window=10))
    with pytest.raises(APIConnectionError, match="retry budget is exhausted") as caught:
        client.create_pet(name="Rex", category_id=1)
    assert caught.value.attempts == 1


def test_async_tasks_share_one_budget() -> None:
    """500 tasks on one async client failing together stay within the budget's allowance."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=10_000, retry_after=0)

    async def main() -> int:
        async with store.async_client() as client:

            async def call() -> int:
                try:
                    await client.list_pets()
                except InternalServerError as exc:
                    return exc.attempts
                raise AssertionError("the call succeeded against an outage")

            return sum(await asyncio.gather(*(call() for _ in range(500))))

    attempts = asyncio.run(main())
    budget = RetryBudget()  # the default, as declared
    assert attempts == len(store.requests)
    assert attempts <= 500 * (1 + budget.percent) + budget.min_per_second * budget.window


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_the_budget_holds_on_every_library(make_client: ClientFactory, variant: str) -> None:
    """Every client and library, over real sockets: a budget of one retry makes 2 + 1 + 1 attempts for 3 calls."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=100)
    with store.serve() as url:
        client = make_client(base_url=url, retry_budget=RetryBudget(percent=0, min_per_second=0.1, window=10))
        counts = []
        for _ in range(3):
            with pytest.raises(InternalServerError) as caught:
                client.list_pets()
            counts.append(caught.value.attempts)
    assert counts == [2, 1, 1]
    assert len(store.requests) == 4


def test_an_error_says_in_an_attribute_that_the_budget_refused() -> None:
    """retry_budget_exhausted is True on the error of a refused call, False on one that ran out of retries."""
    store = FakeAnimalStore(api_keys=[API_KEY])
    store.fail_next(503, times=10, retry_after=0)
    store.fail_next_connection("refused", times=10)
    client = store.client(max_retries=2, retry_budget=RetryBudget(percent=0, min_per_second=0.2, window=10))
    with pytest.raises(InternalServerError) as spent:  # the budget's two retries, all max_retries allows
        client.list_pets()
    assert spent.value.attempts == 3
    assert spent.value.retry_budget_exhausted is False
    with pytest.raises(InternalServerError) as refused:
        client.list_pets()
    assert refused.value.retry_budget_exhausted is True
    store.reset()
    store.fail_next_connection("refused", times=10)
    with pytest.raises(APIConnectionError) as connection:
        client.list_pets()
    assert connection.value.retry_budget_exhausted is True
    assert pickle.loads(pickle.dumps(connection.value)).retry_budget_exhausted is True
