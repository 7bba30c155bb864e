"""Fixtures for the model client tests: the scripted endpoint and clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kit.chat_server import ChatServer, chat_server  # noqa: F401 (the fixture)
from kit.model import KEY, config_for

from plimsoll_ci.model import ModelClient


@pytest.fixture
def make_client(chat_server: ChatServer) -> Callable[..., ModelClient]:  # noqa: F811
    """make_client(**config overrides) -> a ModelClient on `chat_server`, keyed with KEY."""

    def make(**overrides: object) -> ModelClient:
        config = config_for(str(overrides.pop("base_url", chat_server.url)), **overrides)
        return ModelClient(config, environ={config.api_key_env: KEY})

    return make
