"""Nothing crosses API keys: no cookie jar, and no bytes left over from one response answer the next request.

`with_options(api_key=...)` copies share their connections, which is what makes
them cheap; what a server sent for one key must still never reach another.
"""

from __future__ import annotations

import json
import socket

from .conftest import ClientFactory
from .servers import LoopbackServer, respond


def _pets(pet_id: int) -> list[dict[str, object]]:
    return [{"id": pet_id, "name": f"pet-{pet_id}", "categoryId": 1}]


def test_no_cookie_the_service_set_is_ever_sent(make_client: ClientFactory) -> None:
    """A Set-Cookie answer to one key is sent back neither with that key's next call nor with another key's."""
    setting = respond(200, _pets(1), {"Set-Cookie": "session=for-key-one; Path=/"})
    with LoopbackServer([setting, respond(200, _pets(2))]) as server:
        first = make_client(api_key="key-one", base_url=server.base_url)
        first.list_pets()
        first.list_pets()
        first.with_options(api_key="key-two").list_pets()
    assert [request.headers.get("cookie") for request in server.received] == [None, None, None]
    assert [request.headers["authorization"] for request in server.received] == [
        "Bearer key-one",
        "Bearer key-one",
        "Bearer key-two",
    ]


def _with_leftovers(conn: socket.socket) -> bool:
    """Answer with a 2-byte body, then a whole second response nobody asked for."""
    forged = json.dumps(_pets(666)).encode()
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]"
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(forged)).encode()
        + b"\r\n\r\n"
        + forged
    )
    return True


def test_bytes_after_a_responses_end_never_answer_another_key(make_client: ClientFactory) -> None:
    """A response followed by surplus bytes: the next call, with another key, gets its own answer, never the surplus."""
    with LoopbackServer([_with_leftovers, respond(200, _pets(2))]) as server:
        first = make_client(api_key="key-one", base_url=server.base_url)
        assert first.list_pets() == []
        second = first.with_options(api_key="key-two")
        assert [pet.id for pet in second.list_pets()] == [2]
        assert [pet.id for pet in second.list_pets()] == [2]
