"""Every reader of a server's text is linear and capped: the service's notices, the URL redaction, Retry-After.

The costs themselves are measured by ``benchmarks/server_text.py`` (1.4.0 took 9.7 s on a 64 KB ``Link`` of
``<``, and 2.4 s to redact 64 KB of letters before an ``@``); here, what each reader reads, that it reads it the
same as the patterns it replaced where those were right, and that a call carrying such an answer ends by its
deadline on every pair.
"""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from animalstore_client import APIError
from animalstore_client._core.deprecation import MAX_LINK_FIELDS, MAX_NOTICE_FIELD, service_notice
from animalstore_client._core.retry import parse_retry_after
from animalstore_client._core.secrets import redact_text

from .conftest import ALL_VARIANTS, ClientFactory
from .servers import LoopbackServer, respond
from .timing import OVERSHOOT, Stopwatch

# The patterns 1.4.0 read with, quadratic on some inputs: the references for what the one-pass readers find.
OLD_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s@]*@)")
OLD_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]+)*)")
OLD_REL = re.compile(r"""\brel\s*=\s*"?([^";,]+)"?""", re.IGNORECASE)

URL_TEXT = st.text(alphabet="ab1+:/@?#. \n-xhttps=&;", max_size=40)


@given(text=URL_TEXT)
def test_the_userinfo_redaction_finds_what_the_pattern_did(text: str) -> None:
    """On any text, the one-pass redaction masks exactly the user:password@ parts the 1.4.0 pattern masked."""
    expected = OLD_USERINFO.sub(lambda match: match[1] + "***@", text)
    if "=" not in text:  # the query-pair rule, unchanged but for "?", is not the subject here
        assert redact_text(text) == expected


def test_secret_pairs_are_masked_after_any_separators() -> None:
    """A secret query value is masked wherever it stands, after a run of separators too."""
    assert redact_text("https://u:p@h.test/v1?a=1&token=s3cr3t") == "https://***@h.test/v1?a=1&token=REDACTED"
    assert redact_text("see ??token=s3cr3t;key=k") == "see ??token=REDACTED;key=REDACTED"


def _old_targets(field: str) -> list[str]:
    return [
        target
        for target, params in OLD_LINK.findall(field)
        if any(rel.lower() in ("deprecation", "sunset") for found in OLD_REL.findall(params) for rel in found.split())
    ]


LINK_FIELD = st.lists(
    st.tuples(
        st.text(alphabet="abc/:.", max_size=8),
        st.lists(st.sampled_from(["rel=deprecation", 'rel="sunset"', "rel=next", "type=x", "rel=SUNSET alt"])),
    ),
    max_size=5,
).map(lambda links: ", ".join(f"<{target}>" + "".join(f"; {p}" for p in params) for target, params in links))


@given(field=LINK_FIELD)
def test_the_link_reader_finds_what_the_pattern_did_on_well_formed_fields(field: str) -> None:
    """On well-formed Link fields, the one-pass reader finds the deprecation and sunset targets 1.4.0 found."""
    notice = service_notice([(b"Deprecation", b"true"), (b"Link", field.encode())])
    assert notice is not None
    assert list(notice.links) == _old_targets(field)


def test_each_notice_field_is_read_up_to_its_cap() -> None:
    """A link within MAX_NOTICE_FIELD bytes of its field is read; one past it is not; so is a Link field past
    MAX_LINK_FIELDS."""
    near = b"<https://docs.test/near>; rel=deprecation, "
    padding = b"<x>; rel=next, " * (MAX_NOTICE_FIELD // 15)
    far = b"<https://docs.test/far>; rel=deprecation"
    raw = [(b"Deprecation", b"true"), (b"Link", near + padding + far)]
    raw += [(b"Link", b"<https://docs.test/%d>; rel=sunset" % index) for index in range(MAX_LINK_FIELDS + 3)]
    notice = service_notice(raw)
    assert notice is not None
    assert notice.links[0] == "https://docs.test/near"
    assert "https://docs.test/far" not in notice.links
    assert len(notice.links) == 1 + MAX_LINK_FIELDS - 1  # the first Link field and the next ones up to the cap


def test_a_retry_after_longer_than_any_date_is_ignored() -> None:
    """A Retry-After value longer than an HTTP-date can be is ignored, not parsed."""
    assert parse_retry_after("Sat, 05 Dec 2030 00:00:00 GMT") is not None
    assert parse_retry_after("1" * 65) is None
    assert parse_retry_after(" " * 60 + "3") == 3.0


@pytest.mark.parametrize("variant", ALL_VARIANTS, indirect=True)
def test_an_answer_announcing_with_a_huge_link_ends_by_the_deadline(make_client: ClientFactory) -> None:
    """A 200 with a Deprecation and a 40 KB Link of '<' (1.4.0 spent 4 s parsing it): the call ends by its deadline,
    with the pets and one notice, or (a library whose own header limit refuses such a field) an APIError."""
    headers = {"Deprecation": "true", "Link": "<" * 40_000}
    with LoopbackServer([respond(200, [], headers)]) as server:
        client = make_client(base_url=server.base_url, total_timeout=1.0, max_retries=0)
        with Stopwatch() as watch, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                pets = client.list_pets()
            except APIError:
                pets = None
    watch.assert_within(1.0 + OVERSHOOT)  # the deadline, its margin, and load given back
    if pets is not None:
        assert pets == []
        assert [w for w in caught if "announces" in str(w.message)]
