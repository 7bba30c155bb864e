"""A replay runs without Python's cycle collector (it keeps many containers alive and makes
almost no cyclic garbage), gives it back as it found it, and never takes it from a process
forked meanwhile (the blob scan's workers)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

from plimsoll_ci.commands.history import cycle_collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def in_a_forked_child() -> bool:
    """Whether a process forked now has its cycle collector on."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, b"1" if gc.isenabled() else b"0")
        os._exit(0)
    os.close(write)
    try:
        return os.read(read, 1) == b"1"
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_the_collector_is_off_during_a_replay_and_on_after(collector: None) -> None:
    gc.enable()
    with cycle_collector_paused():
        assert not gc.isenabled()
        assert in_a_forked_child()  # a worker collects its own cycles
    assert gc.isenabled()


def test_the_collector_is_given_back_after_a_failure(collector: None) -> None:
    gc.enable()
    with pytest.raises(KeyError), cycle_collector_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector: None) -> None:
    gc.disable()
    with cycle_collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_replay_leaves_little_cyclic_garbage(argon: dict, collector: None) -> None:
    from plimsoll_ci import history, withheld

    gc.collect()
    with cycle_collector_paused():
        report = history.replay(str(argon["repo"].path), withheld.load(argon["set"]),
                                history.Options(progress=False))
        assert report.entries
        found = gc.collect()
    assert found < 500  # (42 here when measured)
