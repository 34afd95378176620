"""The service's tools over MCP: the same tracker, with the idempotency key as a tool argument.

A loop built on the official MCP client (streamable HTTP) calls the service at its URL plus /mcp.
A retry of create_issue under the same ``idempotency_key`` gets the first issue's number and makes
no second record, exactly as a retry under the same Idempotency-Key header does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from crashlab.service.process import ServiceProcess

mcp = pytest.importorskip("mcp")


@pytest.fixture(scope="module")
def service(tmp_path_factory) -> Iterator[ServiceProcess]:
    with ServiceProcess.start(tmp_path_factory.mktemp("mcp"), control=False) as service:
        yield service


@pytest.fixture
def fresh(service) -> ServiceProcess:
    service.reset()
    return service


def calls(service: ServiceProcess, *requests: tuple[str, dict[str, Any]]) -> list[Any]:
    """Call each tool in turn through one MCP client session; each call's result."""

    async def go() -> list[Any]:
        async with mcp.Client(service.env()["CRASHLAB_MCP_URL"]) as client:
            return [await client.call_tool(name, arguments) for name, arguments in requests]

    return asyncio.run(go())


def test_create_issue_retried_under_the_same_idempotency_key_makes_one_issue(fresh):
    request = ("create_issue", {"title": "Login fails", "body": "blank page", "idempotency_key": "k1"})
    first, again = calls(fresh, request, request)
    assert first.structured_content == {"number": 1}
    assert again.structured_content == {"number": 1, "replayed": True}
    assert [(r["title"], r["key"]) for r in fresh.state()["records"]] == [("Login fails", "k1")]


def test_a_key_means_the_same_over_mcp_and_over_http(fresh):
    sent = httpx.post(fresh.url + "/issues", json={"title": "Login fails"}, headers={"Idempotency-Key": "k1"},
                      trust_env=False)
    assert sent.json() == {"number": 1}
    (retry,) = calls(fresh, ("create_issue", {"title": "Login fails", "idempotency_key": "k1"}))
    assert retry.structured_content == {"number": 1, "replayed": True}
    (other,) = calls(fresh, ("create_issue", {"title": "Another", "idempotency_key": "k1"}))
    assert other.is_error and "422: key 'k1' was first used for another request" in other.content[0].text
    assert len(fresh.state()["records"]) == 1


def test_search_comment_lookup_and_the_person_answer_over_mcp(fresh):
    created, commented, found, missing, looked_up, unknown, asked = calls(
        fresh,
        ("create_issue", {"title": "Export is slow", "body": "the CSV takes minutes"}),
        ("comment", {"issue": 1, "body": "on it", "idempotency_key": "c1"}),
        ("search", {"query": "csv"}),
        ("comment", {"issue": 9, "body": "lost"}),
        ("lookup", {"idempotency_key": "c1"}),
        ("lookup", {"idempotency_key": "c2"}),
        ("ask_person", {"title": "Export is slow"}),
    )
    assert created.structured_content == {"number": 1}
    assert commented.structured_content == {"number": 1}
    assert found.structured_content == {
        "issues": [{"number": 1, "title": "Export is slow", "body": "the CSV takes minutes"}]}
    assert missing.is_error and missing.content[0].text.endswith("404: there is no issue #9 to comment on")
    assert looked_up.structured_content == {"found": True, "status": 201, "body": {"number": 1}}
    assert unknown.structured_content == {"found": False}
    assert asked.structured_content == {"happened": True, "numbers": [1]}
    assert fresh.state()["asks"] == 1


def test_a_key_beyond_printable_ascii_is_refused_over_mcp_as_over_http_so_neither_files_it_twice(fresh):
    """The HTTP header was read as Latin-1 and MCP's argument as UTF-8: one key was two, and a keyed service filed
    the issue twice. The draft's key is printable ASCII; no door takes another."""
    sent = httpx.post(fresh.url + "/issues", json={"title": "Login fails"}, headers={"Idempotency-Key": "clé".encode()},
                      trust_env=False)
    (retry, looked_up) = calls(fresh, ("create_issue", {"title": "Login fails", "idempotency_key": "clé"}),
                               ("lookup", {"idempotency_key": "clé"}))
    assert sent.status_code == 400
    for refused in (retry, looked_up):
        assert refused.is_error and ": 400: an idempotency key is printable ASCII" in refused.content[0].text
    assert fresh.state()["records"] == []
