"""The idempotency contracts of real APIs: each a module, each cited, each found by its slug."""

import importlib

import pytest

from crashlab.errors import BadInput
from crashlab.profiles import DEFAULT, Profile, find, registry


def test_the_default_is_the_draft_and_comes_first():
    assert next(iter(registry())) == DEFAULT == "ietf"


@pytest.mark.parametrize("slug", sorted(registry()))
def test_each_profile_cites_the_page_it_was_read_from_in_its_module(slug):
    profile = registry()[slug]
    module = importlib.import_module(f"crashlab.profiles.{slug.replace('-', '_')}")
    assert module.PROFILE is profile
    assert profile.read and profile.lesson
    if profile.honours_keys:
        assert profile.source.startswith("https://") and profile.source in module.__doc__
        assert "Read " in module.__doc__


def test_the_documented_differences_are_data():
    assert find("qonto").retention == 0.5 and find("truelayer").retention == 720.0
    assert find("stripe-v1").after_failure == "replay-failure"
    assert {find(s).after_failure for s in ("checkout", "acp", "qonto")} == {"run-again"}
    assert {find(s).other_payload for s in ("qonto", "worldline")} == {"replayed"}
    assert {s for s, p in registry().items() if p.key_required} == {"acp", "qonto", "truelayer"}
    assert find("worldline").max_key == 40
    assert not find("none").holds(0.0) and find("ietf").holds(23.9) and not find("ietf").holds(24.0)


def test_an_unknown_profile_names_the_valid_ones():
    with pytest.raises(BadInput, match=r"unknown profile 'stripe'.*valid: ietf, acp"):
        find("stripe")


def test_a_profile_is_plain_frozen_data():
    with pytest.raises(AttributeError):
        find("ietf").retention = 1.0  # type: ignore[misc]
    assert isinstance(find("acp"), Profile) and find("acp").code("in-flight") == "idempotency_in_flight"
