"""The typed Python SDK for the animal store service.

```python
from animalstore_client import AnimalStoreClient

with AnimalStoreClient() as client:  # the key comes from ANIMALSTORE_API_KEY
    pet = client.create_pet(name="Rex", category_id=1, status="available")
    print(client.list_pets(status="available"))
```
"""

from animalstore_client._clients._generated.client_sync import AnimalStoreClient
from animalstore_client._clients.backends import AsyncBackendName, BackendName
from animalstore_client._clients.client_async import AsyncAnimalStoreClient
from animalstore_client._clients.insecure import InsecureTransportWarning
from animalstore_client._clients.optional_types import AsyncHTTPClient, HTTPClient
from animalstore_client._clients.response import APIResponse
from animalstore_client._core import public as _public
from animalstore_client._core.budget import RetryBudget
from animalstore_client._core.defaults import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
)
from animalstore_client._core.environments import Environment
from animalstore_client._core.exceptions import (
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
from animalstore_client._core.middleware import (
    AsyncCallNext,
    AsyncMiddleware,
    AttemptInfo,
    CallNext,
    Middleware,
    attempt_info,
)
from animalstore_client._core.models import ErrorBody, NewPet, Pet, PetStatus, PetStatusLiteral
from animalstore_client._core.secrets import MaskedException
from animalstore_client._core.validation import NOT_GIVEN, NotGiven
from animalstore_client._version import __version__

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
    "MaskedException",
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
