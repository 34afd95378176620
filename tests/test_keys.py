"""The chapter's Key: SHA-256 over length-prefixed run and call, first 16 bytes in lowercase hex."""

import hashlib

from crashlab.keys import key


def test_key_is_sha256_of_the_length_prefixed_parts():
    expected = hashlib.sha256(b"12:triage-run-11:A").digest()[:16].hex()
    assert key("triage-run-1", "A") == expected


def test_lengths_are_utf8_bytes_not_characters():
    expected = hashlib.sha256("4:r\u00e9n5:\u00e9t\u00e9".encode()).digest()[:16].hex()
    assert key("r\u00e9n", "\u00e9t\u00e9") == expected


def test_known_vectors():
    # Pinned so that a change to the key (which would orphan every key a tracker holds) is seen.
    assert key("triage-run-1", "A") == "c5418963115ebf358595f085f36a2a46"
    assert key("a:b", "c") == "1c2de18a3ef3c0cdcce3495f7903aff9"
    assert key("", "") == hashlib.sha256(b"0:0:").digest()[:16].hex()


def test_the_boundary_between_run_and_call_matters():
    assert key("a:b", "c") != key("a", "b:c")
    assert key("ab", "c") != key("a", "bc")


def test_every_retry_carries_the_same_key_and_calls_never_share_one():
    assert key("run-1", "A") == key("run-1", "A")
    assert len({key("run-1", c) for c in "ABCS"} | {key("run-2", "A")}) == 5
