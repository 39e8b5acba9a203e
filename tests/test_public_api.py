"""The public surface: names, version, docstrings, and the two clients kept in step."""

from __future__ import annotations

import functools
import html
import importlib.metadata
import inspect
import pickle
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import httpx
import pytest

import animalstore_client
import animalstore_client.testing
from animalstore_client import AnimalStoreClient, AsyncAnimalStoreClient, NotFoundError, Pet, PetStatus
from animalstore_client._clients._generated.client_sync import AnimalStoreClientWithRawResponse
from animalstore_client._clients.client_async import AsyncAnimalStoreClientWithRawResponse

EXPECTED = {
    "AnimalStoreClient",
    "AsyncAnimalStoreClient",
    "Environment",
    "Pet",
    "NewPet",
    "PetStatus",
    "PetStatusLiteral",
    "ErrorBody",
    "AnimalStoreError",
    "ClientValidationError",
    "APIError",
    "APIConnectionError",
    "APITimeoutError",
    "APIResponseValidationError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_TOTAL_TIMEOUT",
    "NOT_GIVEN",
    "NotGiven",
    "APIResponse",
    "InsecureTransportWarning",
    "Middleware",
    "AsyncMiddleware",
    "CallNext",
    "AsyncCallNext",
    "MaskedException",
    "MiddlewareError",
    "RetryBudget",
    "BackendName",
    "AsyncBackendName",
    "HTTPClient",
    "AsyncHTTPClient",
    "AttemptInfo",
    "attempt_info",
    "__version__",
}


def test_all_is_exactly_the_public_names_and_sorted() -> None:
    """__all__ lists the contract's names, sorted, and each one imports."""
    assert set(animalstore_client.__all__) == EXPECTED
    assert animalstore_client.__all__ == sorted(animalstore_client.__all__, key=lambda n: (not n.isupper(), n))
    for name in animalstore_client.__all__:
        assert getattr(animalstore_client, name) is not None


def test_version_is_the_distributions() -> None:
    """__version__ is single-sourced and equals the installed distribution's version."""
    assert animalstore_client.__version__ == importlib.metadata.version("animalstore-client") == "2.0.0"


def test_the_changelog_releases_this_version_and_keeps_an_unreleased_section() -> None:
    """The newest release in CHANGELOG.md is __version__, dated, under an Unreleased section for what comes next;
    the docs pin that version."""
    root = Path(__file__).parent.parent
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", (root / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    assert headings[1][0] == animalstore_client.__version__
    assert re.fullmatch(r" - \d{4}-\d{2}-\d{2}", headings[1][1])
    for page in ("index.md", "usage.md"):
        pins = re.findall(r"animalstore-client==([\w.]+)", (root / "docs" / page).read_text())
        assert pins == [animalstore_client.__version__], page


def test_every_public_name_has_a_docstring() -> None:
    """Each public class, function and public method or property is documented."""
    missing: list[str] = []
    for name in animalstore_client.__all__:
        obj = getattr(animalstore_client, name)
        if not inspect.isclass(obj):
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        for attr, member in vars(obj).items():
            if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            if not (getattr(member, "__doc__", "") or "").strip():
                missing.append(f"{name}.{attr}")
    assert missing == []


def _to_sync(text: str) -> str:
    """The words in which the async API's text differs from the sync API's."""
    text = re.sub(r"(?<![A-Za-z0-9])Async(?=[A-Z])", "", text)
    text = re.sub(r"\basync (def|with|for)\b", r"\1", text)
    text = re.sub(r"\bawait ", "", text)
    text = re.sub(r"\baclose\b", "close", text)
    text = text.replace("pyreqwest.client.Client", "pyreqwest.client.SyncClient")
    return text.replace("__aenter__", "__enter__").replace("__aexit__", "__exit__")


def _surface(cls: type, *, asynchronous: bool) -> dict[str, object]:
    """Everything a user can see of ``cls``: each public member's kind, signature and docstring.

    Annotations are compared as written (strings), return types included, so
    ``-> list[Pet]`` on an ``async def`` matches the sync one modulo Awaitable.
    """
    names = [name for name in dir(cls) if not name.startswith("_")]
    dunders = ("__init__", "__aenter__", "__aexit__") if asynchronous else ("__init__", "__enter__", "__exit__")
    names += [name for name in dunders if name in vars(cls)]
    surface: dict[str, object] = {}
    for name in names:
        member = inspect.getattr_static(cls, name)
        key = _to_sync(name) if asynchronous else name
        if isinstance(member, (property, functools.cached_property)):
            getter = member.fget if isinstance(member, property) else member.func
            assert getter is not None
            surface[key] = ("property", _to_sync(str(inspect.signature(getter).return_annotation)), member.__doc__)
            continue
        function = getattr(cls, name)
        signature = inspect.signature(function)
        parameters = [(p.name, p.kind, p.default, _to_sync(str(p.annotation))) for p in signature.parameters.values()]
        doc = inspect.getdoc(function)
        surface[key] = (
            "method",
            parameters,
            _to_sync(str(signature.return_annotation)),
            _to_sync(doc) if (asynchronous and doc) else doc,
        )
    return surface


@pytest.mark.parametrize(
    ("sync", "asynchronous"),
    [
        (AnimalStoreClient, AsyncAnimalStoreClient),
        (AnimalStoreClientWithRawResponse, AsyncAnimalStoreClientWithRawResponse),
    ],
)
def test_sync_and_async_have_the_same_public_surface(sync: type, asynchronous: type) -> None:
    """Same members, parameters, defaults, return types and docstrings, modulo the async words.

    The clients and their raw-response views alike; every method of the async
    side is a coroutine function and none of the sync side is (``__init__`` aside).
    """
    expected = _surface(sync, asynchronous=False)
    actual = _surface(asynchronous, asynchronous=True)
    assert sorted(actual) == sorted(expected)
    for name, value in expected.items():
        assert actual[name] == value, name
    # The class docstrings differ in their opening sentences (threads vs an
    # event loop); what follows, the example and the Args, matches.
    sync_doc, async_doc = inspect.getdoc(sync) or "", inspect.getdoc(asynchronous) or ""
    assert _to_sync(async_doc.split("\n\n", 2)[-1]) == sync_doc.split("\n\n", 1)[-1]


def test_public_classes_report_the_public_module() -> None:
    """Every public class and function says it lives in animalstore_client (or .testing), as tracebacks, reprs
    and pickles show, wherever in the private folders it is defined."""
    for module in (animalstore_client, animalstore_client.testing):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) or inspect.isfunction(value):
                assert value.__module__ == module.__name__, name
                assert pickle.loads(pickle.dumps(value)) is value, name
    assert repr(NotFoundError) == "<class 'animalstore_client.NotFoundError'>"
    assert "animalstore_client.AsyncAnimalStoreClient" in repr(AsyncAnimalStoreClient)


def test_tracebacks_name_the_public_module() -> None:
    """A traceback's last line reads animalstore_client.NotFoundError: ..."""
    try:
        raise NotFoundError(
            "404 Not Found",
            response=httpx.Response(404, request=httpx.Request("GET", "https://x.example/v1/pets/1")),
            body=None,
            error=None,
        )
    except NotFoundError as exc:
        last = traceback.format_exception(exc)[-1]
    assert last == "animalstore_client.NotFoundError: 404 Not Found\n"


def test_public_classes_still_pickle_by_their_public_name() -> None:
    """Pickles refer to animalstore_client.<Name> and load back."""
    pet = Pet(id=1, name="Rex", category_id=2, status=PetStatus.AVAILABLE)
    data = pickle.dumps(pet)
    assert b"animalstore_client\x94\x8c\x03Pet" in data
    assert pickle.loads(data) == pet
    assert pickle.loads(pickle.dumps(PetStatus.SOLD)) is PetStatus.SOLD
    assert pickle.loads(pickle.dumps(NotFoundError)) is NotFoundError


def _coroutine_functions(cls: type) -> set[str]:
    # get_pet's warning wrapper is a plain function (it warns at the call, not
    # at the await) around the coroutine function, so look through it.
    return {
        name
        for name in dir(cls)
        if (not name.startswith("_") or name.startswith("__"))
        and callable(member := getattr(cls, name))
        and inspect.iscoroutinefunction(inspect.unwrap(member))
    }


def test_async_operations_are_coroutine_functions() -> None:
    """Every I/O method of the async side is awaitable; nothing on the sync side is."""
    operations = {"list_pets", "create_pet", "get_pet"}
    assert _coroutine_functions(AsyncAnimalStoreClient) == operations | {"request", "aclose", "__aenter__", "__aexit__"}
    assert _coroutine_functions(AsyncAnimalStoreClientWithRawResponse) == operations
    assert _coroutine_functions(AnimalStoreClient) == set()
    assert _coroutine_functions(AnimalStoreClientWithRawResponse) == set()


def test_the_api_reference_lists_every_public_name() -> None:
    """docs/reference.md documents exactly the names of both __all__ lists, and nothing private."""
    import re
    from pathlib import Path

    import animalstore_client
    import animalstore_client.testing

    text = (Path(__file__).parent.parent / "docs" / "reference.md").read_text()
    documented = set(re.findall(r"^::: (\S+)$", text, re.MULTILINE))
    public = {f"animalstore_client.{name}" for name in animalstore_client.__all__} | {
        f"animalstore_client.testing.{name}" for name in animalstore_client.testing.__all__
    }
    plugin = {name for name in documented if name.startswith("animalstore_client.testing.pytest_plugin.")}
    assert documented - plugin == public
    assert {name.rsplit(".", 1)[1] for name in plugin} == {
        "animalstore_fake",
        "animalstore_fake_client",
        "animalstore_fake_async_client",
    }


def test_the_built_reference_shows_every_public_name_and_nothing_private(tmp_path: Path) -> None:
    """The site as readers see it: an entry for each name of both __all__ lists, enum members,
    the timeout types spelt out, and no private name."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.skip("mkdocs is not installed here (pip install -r .ci/requirements.txt); CI runs this")
    root = Path(__file__).parent.parent
    subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=root,
        capture_output=True,
        check=True,
        timeout=300,
    )
    page = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(animalstore_client\.[\w.]+)"', page))
    public = {f"animalstore_client.{name}" for name in animalstore_client.__all__} | {
        f"animalstore_client.testing.{name}" for name in animalstore_client.testing.__all__
    }
    assert public <= anchors, f"not in the built reference: {sorted(public - anchors)}"
    private = sorted(a for a in anchors if any(p.startswith("_") and not p.endswith("__") for p in a.split(".")))
    assert not private, f"private names in the built reference: {private}"
    assert "BaseClient" not in page
    for member in (*PetStatus, *animalstore_client.Environment):
        assert f"animalstore_client.{type(member).__name__}.{member.name}" in anchors
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", page)))
    signatures = re.findall(r"(?:list_pets|create_pet|get_pet|request|with_options|AnimalStoreClient)\(.*?\)", text)
    timeouts = {m for s in signatures for m in re.findall(r"\btimeout: [^=]+=", s)}
    assert timeouts == {"timeout: float | httpx.Timeout | NotGiven | None ="}, timeouts
