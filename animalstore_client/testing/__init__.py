"""Test your code against an in-memory animal store: no network, no key.

```python
from animalstore_client.testing import FakeAnimalStore

def test_adopt_flow():
    store = FakeAnimalStore(pets=[{"id": 1, "name": "Rex", "categoryId": 1, "status": "available"}])
    with store.client() as client:
        my_app.adopt(client, pet_id=1)
    assert store.requests[-1].method == "POST"
```

Run it as a server with ``python -m animalstore_client.testing --port 8080``.
Importing this module is never needed by the SDK itself, so it costs nothing
to applications that do not test.
"""

from animalstore_client._core import public as _public

from ._errors import make_status_error
from ._faults import QueuedFault
from ._messages import FAKE_BASE_URL, ConnectionFaultKind, FakeResponse, RecordedRequest
from ._recording import MAX_RECORDED_BYTES, MAX_RECORDED_REQUESTS
from ._store import FakeAnimalStore
from ._transport import AsyncFakeTransport, FakeTransport

__all__ = [
    "FAKE_BASE_URL",
    "MAX_RECORDED_BYTES",
    "MAX_RECORDED_REQUESTS",
    "AsyncFakeTransport",
    "ConnectionFaultKind",
    "FakeAnimalStore",
    "FakeResponse",
    "FakeTransport",
    "QueuedFault",
    "RecordedRequest",
    "make_status_error",
]

_public.show_public_module(globals())
