"""`ctxkeep daemon http`: where the HTTP front door listens, and how to point Ollama and
OpenAI clients at it."""

import argparse

from ...protocol import paths
from ..core import CtxkeepError
from .common import connect, fail


def show(args: argparse.Namespace) -> int:
    try:
        with connect(args) as client:
            status = client.status().status
    except CtxkeepError as exc:
        return fail(f"{exc}")
    token_file = paths.http_token_path()
    needs_token = status.http_auth == "token"
    token = token_file.read_text().strip() if needs_token and token_file.exists() else ""
    print(f"Unix socket (no token): {status.http_socket}")
    print(f"  curl --unix-socket {status.http_socket} http://localhost/api/tags")
    if not status.http_url:
        print('TCP: off. To serve Ollama and OpenAI clients over TCP, either let systemd hold '
              'the port\n  ctxkeep daemon install --http 127.0.0.1:11435\nor set in config.toml\n'
              '  http_listen = "127.0.0.1:11435"\nand restart ctxkeepd.')
        return 0
    print(f"TCP: {status.http_url}" + (f"  (bearer token in {token_file})" if needs_token else "  (no token)"))
    print("Point clients at it:")
    print(f"  Ollama clients:  OLLAMA_HOST={status.http_url}" +
          ("  (and send `Authorization: Bearer TOKEN`)" if needs_token else ""))
    print(f"  OpenAI clients:  base URL {status.http_url}/v1, API key " +
          ("the token" if needs_token else "anything"))
    if token and getattr(args, "show_token", False):
        print(f"token: {token}")
    return 0
