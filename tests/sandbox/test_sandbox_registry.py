"""The provider registry: one table, every provider follows the protocol, every list reads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import all_providers, tiers
from plimsoll_ci.sandbox.all_providers import PROVIDERS


def test_every_provider_in_the_table_follows_the_protocol():
    assert list(PROVIDERS) == ["gvisor", "docker", "process"]  # strongest first
    for name, provider in PROVIDERS.items():
        for fn in ("configured_tier", "available", "start", "retry_start"):
            assert callable(getattr(provider, fn)), f"{name}.{fn}"
        assert provider.configured_tier() in tiers.TIERS
        ok, why = provider.available()
        assert isinstance(ok, bool) and (ok or why)
    ranks = [tiers.rank(p.configured_tier()) for p in PROVIDERS.values()]
    assert ranks == sorted(ranks, reverse=True)


def test_an_unknown_provider_is_bad_input_naming_every_choice():
    with pytest.raises(BadInput, match="use one of gvisor, docker, process"):
        all_providers.get("firecracker")


def test_the_grade_command_offers_exactly_the_table_and_the_tier_list():
    out = subprocess.run([sys.executable, "-m", "plimsoll_ci", "grade", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "{" + ",".join(PROVIDERS) + "}" in out
    assert "{" + ",".join(tiers.TIERS) + "}" in out


def test_only_gvisor_retries_a_start_and_only_for_its_cgroups(monkeypatch):
    from plimsoll_ci.sandbox import gvisor

    monkeypatch.setattr(gvisor, "_NO_CGROUPS", [])
    assert not PROVIDERS["docker"].retry_start("cgroup: permission denied")
    assert not PROVIDERS["process"].retry_start("cgroup: permission denied")
    assert not gvisor.retry_start("some other failure")
    assert gvisor.retry_start("...\ncannot set up cgroup: permission denied\n")
    assert not gvisor.retry_start("cannot set up cgroup: permission denied")  # once only
