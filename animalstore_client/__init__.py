"""The typed Python SDK for the animal store service.

```python
from animalstore_client import AnimalStoreClient

with AnimalStoreClient() as client:  # the key comes from ANIMALSTORE_API_KEY
    pet = client.create_pet(name="Rex", category_id=1, status="available")
    print(client.list_pets(status="available"))
```
"""

from ._client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, AnimalStoreClient, AsyncAnimalStoreClient
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
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._models import ErrorBody, NewPet, Pet, PetStatus
from ._version import __version__

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AnimalStoreClient",
    "AnimalStoreError",
    "AsyncAnimalStoreClient",
    "AuthenticationError",
    "BadRequestError",
    "ClientValidationError",
    "ConflictError",
    "Environment",
    "ErrorBody",
    "InternalServerError",
    "NewPet",
    "NotFoundError",
    "PermissionDeniedError",
    "Pet",
    "PetStatus",
    "RateLimitError",
    "UnprocessableEntityError",
    "__version__",
]
