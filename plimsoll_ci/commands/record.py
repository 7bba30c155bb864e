"""`plimsoll-ci record --upstream URL --out DIR [--port P]`: a recording reverse proxy."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `plimsoll-ci record`."""
    parser.add_argument("--upstream", required=True, metavar="URL",
                        help="the real endpoint's base URL, e.g. https://api.openai.com")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder the recorded requests and responses are written to")
    parser.add_argument("--port", type=int, default=8788,
                        help="port to listen on (default 8788; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; anything else exposes the proxy)")
    parser.add_argument("--keep-credentials", action="store_true",
                        help="record Authorization / API-key headers as sent instead of redacted")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; prints the base URL the harness should use."""
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.tripwire.recorder import make_server

    if not 0 <= args.port <= 65535:
        raise BadInput(f"--port {args.port}: not a port number; use 0..65535")
    server = make_server(args.upstream, args.out, args.host, args.port,
                         keep_credentials=args.keep_credentials, quiet=not args.verbose)
    host, port = server.socket.getsockname()[:2]  # (= server_address, typed)
    print(f"plimsoll-ci record: listening on http://{host}:{port} -> {args.upstream}; "
          f"writing to {args.out}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
