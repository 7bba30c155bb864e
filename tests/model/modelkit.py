"""What the model client tests share: the made-up key and a config for a test endpoint."""

from __future__ import annotations

from plimsoll_ci.model import ModelConfig

# a made-up key shaped like a real one; every test that could leak it looks for it
KEY = "sk-proj-PLIMSOLLtestKEY0a1b2c3d4e5f6a7b8c9d0e1f2"


def config_for(url: str, **overrides: object) -> ModelConfig:
    """A config for a test endpoint: short waits so retry tests stay fast."""
    values: dict = {"base_url": url, "model": "scripted", "max_tokens": 100_000, "timeout": 5.0,
                    "retries": 2, "backoff": 0.01, "max_wait": 5.0}
    values.update(overrides)
    return ModelConfig(**values)
