"""The provider registry: one table, every provider follows the protocol, every list reads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from plimsoll_ci import tiers
from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import all_providers
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


def _docker_available(host: str, *wrapper: str) -> str:
    """docker.available()'s reason, in a fresh process pointed at `host`."""
    import os

    code = "from plimsoll_ci.sandbox import docker; print(docker.available())"
    proc = subprocess.run([*wrapper, sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "DOCKER_HOST": host})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def root_only_socket(tmp_path):
    """A listening unix socket another user owns, mode 0600 (like a docker.sock one may not
    use), and a wrapper that runs a process without the right to override file modes."""
    import os
    import shutil
    import socket

    path = tmp_path / "docker.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen()
    wrapper = []
    if os.geteuid() == 0:  # root reads every file: drop the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is needed to run without file-mode overrides")
        wrapper = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
        os.chown(path, 65534, 65534)
    os.chmod(path, 0o600)
    probe = subprocess.run([*wrapper, sys.executable, "-c",
                            f"import os; print(os.access({str(path)!r}, os.W_OK))"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "False":
        pytest.skip(f"cannot make a socket this process may not use here ({probe.stderr[-200:]})")
    yield path, wrapper
    sock.close()


def test_a_docker_socket_the_user_may_not_use_is_said_not_start_dockerd(root_only_socket):
    path, wrapper = root_only_socket
    why = _docker_available(f"unix://{path}", *wrapper)
    assert f"the docker socket {path} is not readable by this user" in why
    assert "docker group" in why and "start it" not in why


def test_a_missing_or_silent_docker_socket_says_to_start_dockerd(tmp_path):
    import socket

    why = _docker_available(f"unix://{tmp_path}/none.sock")
    assert f"no docker socket at {tmp_path}/none.sock" in why and "start dockerd" in why
    dead = tmp_path / "dead.sock"
    socket.socket(socket.AF_UNIX).bind(str(dead))  # bound, never listening: refused
    why = _docker_available(f"unix://{dead}")
    assert "dockerd does not answer" in why and "start it" in why
