"""The chapter's Key: SHA-256 over length-prefixed run and call, first 16 bytes in lowercase hex."""

import hashlib
import os
import subprocess
import sys

from crashlab.loops.keys import key


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


def test_no_two_calls_share_a_key_and_a_retry_in_a_new_process_carries_the_same_one():
    assert len({key("run-1", c) for c in "ABCS"} | {key("run-2", "A")}) == 5
    retried = subprocess.run(
        [sys.executable, "-c", "from crashlab.loops.keys import key; print(key('run-1', 'A'))"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert retried.stdout.strip() == key("run-1", "A")  # no per-process salt, as Python's hash() has
