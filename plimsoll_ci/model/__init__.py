"""An OpenAI-compatible chat-completions client: budget, retries, key handling, every request
recorded. Standard library only at run time (`http.client`).

    from plimsoll_ci.model import ModelClient, ModelConfig, Tool

    config = ModelConfig(base_url="http://127.0.0.1:8000/v1", model="m", max_tokens=200_000)
    client = ModelClient(config)          # reads the key from $OPENAI_API_KEY (config.api_key_env)
    session = client.session(system="...", tools=[Tool("fly", "fly the controller", {...})])

Commands take the same flags everywhere (`plimsoll_ci.commands._model`): `--base-url`, `--model`,
`--api-key-env`, `--max-tokens`. See `docs/model.md`.

Names are imported on first use, so a command that only adds the flags stays quick to start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "ApiKey": "config", "ModelConfig": "config", "read_key": "config",
    "EndpointError": "errors", "MalformedReply": "errors", "ModelError": "errors",
    "Budget": "session", "ModelClient": "session", "Session": "session",
    "SessionOutcome": "session", "Stop": "session",
    "Exchange": "transport",
    "Reply": "wire", "Tool": "wire", "ToolCall": "wire",
}
__all__ = [
    "ApiKey", "Budget", "EndpointError", "Exchange", "MalformedReply", "ModelClient",
    "ModelConfig", "ModelError", "Reply", "Session", "SessionOutcome", "Stop", "Tool", "ToolCall",
    "read_key",
]

if TYPE_CHECKING:
    from plimsoll_ci.model.config import ApiKey, ModelConfig, read_key
    from plimsoll_ci.model.errors import EndpointError, MalformedReply, ModelError
    from plimsoll_ci.model.session import Budget, ModelClient, Session, SessionOutcome, Stop
    from plimsoll_ci.model.transport import Exchange
    from plimsoll_ci.model.wire import Reply, Tool, ToolCall


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'plimsoll_ci.model' has no attribute {name!r}")
    return getattr(importlib.import_module(f"plimsoll_ci.model.{_WHERE[name]}"), name)
