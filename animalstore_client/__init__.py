"""The typed Python SDK for the animal store service.

```python
from animalstore_client import AnimalStoreClient

with AnimalStoreClient() as client:  # the key comes from ANIMALSTORE_API_KEY
    pet = client.create_pet(name="Rex", category_id=1, status="available")
    print(client.list_pets(status="available"))
```
"""

from . import _public
from ._backends import AsyncBackendName, BackendName
from ._budget import RetryBudget
from ._client_async import AsyncAnimalStoreClient
from ._client_sync import AnimalStoreClient
from ._defaults import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, DEFAULT_TOTAL_TIMEOUT
from ._environments import Environment
from ._exceptions import (
    AnimalStoreError,
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientValidationError,
    ConflictError,
    InternalServerError,
    MiddlewareError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._insecure import InsecureTransportWarning
from ._middleware import AsyncCallNext, AsyncMiddleware, AttemptInfo, CallNext, Middleware, attempt_info
from ._models import ErrorBody, NewPet, Pet, PetStatus, PetStatusLiteral
from ._optional_types import AsyncHTTPClient, HTTPClient
from ._response import APIResponse
from ._validation import NOT_GIVEN, NotGiven
from ._version import __version__

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TOTAL_TIMEOUT",
    "NOT_GIVEN",
    "APIConnectionError",
    "APIError",
    "APIResponse",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AnimalStoreClient",
    "AnimalStoreError",
    "AsyncAnimalStoreClient",
    "AsyncBackendName",
    "AsyncCallNext",
    "AsyncHTTPClient",
    "AsyncMiddleware",
    "AttemptInfo",
    "AuthenticationError",
    "BackendName",
    "BadRequestError",
    "CallNext",
    "ClientValidationError",
    "ConflictError",
    "Environment",
    "ErrorBody",
    "HTTPClient",
    "InsecureTransportWarning",
    "InternalServerError",
    "Middleware",
    "MiddlewareError",
    "NewPet",
    "NotFoundError",
    "NotGiven",
    "PermissionDeniedError",
    "Pet",
    "PetStatus",
    "PetStatusLiteral",
    "RateLimitError",
    "RetryBudget",
    "UnprocessableEntityError",
    "__version__",
    "attempt_info",
]


_public.show_public_module(globals())
