"""The model flags every command that talks to a model takes, the same way everywhere.

    add_model_arguments(parser)                 # --base-url --model --api-key-env --max-tokens,
                                                # timeouts, retries, session bounds
    config = model_config_from(args)            # BadInput (exit 2) without the key or the budget
    add_model_arguments(parser, compare=True)   # --model repeatable
    configs = model_configs_from(args)          # one ModelConfig per --model

The key itself never comes from the command line: `--api-key` exists only to refuse it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from plimsoll_ci.model.config import DEFAULT_KEY_ENV, ModelConfig


def add_model_arguments(parser: argparse.ArgumentParser, compare: bool = False) -> None:
    """Add the model endpoint's flags; `compare` makes `--model` repeatable."""
    g = parser.add_argument_group("model endpoint (any OpenAI-compatible chat-completions API)")
    g.add_argument("--base-url", metavar="URL",
                   help="the endpoint's base URL, e.g. https://api.openai.com/v1 or "
                        "http://127.0.0.1:8000/v1 (or a `plimsoll-ci record` proxy in front)")
    if compare:
        g.add_argument("--model", metavar="NAME", action="append",
                       help="a model to run (repeat to compare several)")
    else:
        g.add_argument("--model", metavar="NAME", help="the model's name at the endpoint")
    g.add_argument("--api-key-env", metavar="VAR", default=DEFAULT_KEY_ENV,
                   help=f"environment variable holding the API key (default {DEFAULT_KEY_ENV}); "
                        "the key is never taken from the command line")
    g.add_argument("--max-tokens", type=int, metavar="N",
                   help="total token budget of the run, counted from the responses' usage "
                        "(required)")
    g.add_argument("--request-timeout", type=float, metavar="SECONDS", default=120.0,
                   help="abandon a request after this long, however slowly it trickles "
                        "(connect, headers and body; default 120)")
    g.add_argument("--max-retries", type=int, metavar="N", default=4,
                   help="retries of a 429, 5xx, timeout or refused connection (default 4)")
    g.add_argument("--session-seconds", type=float, metavar="SECONDS", default=1800.0,
                   help="wall clock of one model session (a rebuild, an eval attempt): its "
                        "requests, tools and waits; then it stops as time_limit (default 1800)")
    g.add_argument("--max-tool-calls-per-reply", type=int, metavar="N", default=8,
                   help="tool calls of one reply that are run; the rest are answered with an "
                        "error (default 8)")
    g.add_argument("--max-tool-calls", type=int, metavar="N", default=120,
                   help="tool calls of one session; then it stops as tool_calls (default 120)")
    # an exact match wins over argparse's prefix matching, so `--api-key sk-...` lands here and is
    # refused instead of being taken as --api-key-env and echoed back as a variable's name
    g.add_argument("--api-key", dest="_api_key_on_argv", help=argparse.SUPPRESS)


def model_configs_from(args: argparse.Namespace,
                       environ: Mapping[str, str] | None = None) -> list[ModelConfig]:
    """One checked ModelConfig per `--model`; BadInput (exit 2) when the key's variable is unset
    or empty, the budget is missing, or a flag is malformed. The key is checked here, so a command
    refuses before it does any work; it is read again by `ModelClient`."""
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.model.config import read_key

    if getattr(args, "_api_key_on_argv", None) is not None:
        raise BadInput("--api-key: a key on the command line is visible to every process on the "
                       "machine and kept in shell history; export it in an environment variable "
                       f"and name that with --api-key-env (default {DEFAULT_KEY_ENV})")
    if not args.base_url:
        raise BadInput("--base-url is required: the endpoint's base URL, e.g. "
                       "https://api.openai.com/v1 or http://127.0.0.1:8000/v1")
    models = args.model if isinstance(args.model, list) else [args.model] if args.model else []
    if not models:
        raise BadInput("--model is required: the model's name at the endpoint")
    if args.max_tokens is None:
        raise BadInput("--max-tokens is required: the run's total token budget, e.g. "
                       "--max-tokens 200000; calls stop when it is spent")
    configs = [ModelConfig(base_url=args.base_url, model=m, max_tokens=args.max_tokens,
                           api_key_env=args.api_key_env, timeout=args.request_timeout,
                           retries=args.max_retries, session_seconds=args.session_seconds,
                           calls_per_reply=args.max_tool_calls_per_reply,
                           calls_per_session=args.max_tool_calls) for m in models]
    read_key(args.api_key_env, os.environ if environ is None else environ)
    return configs


def model_config_from(args: argparse.Namespace,
                      environ: Mapping[str, str] | None = None) -> ModelConfig:
    """The checked ModelConfig of a command with one `--model` (see `model_configs_from`)."""
    from plimsoll_ci.errors import BadInput

    configs = model_configs_from(args, environ)
    if len(configs) != 1:
        raise BadInput("--model: give one model here")
    return configs[0]
