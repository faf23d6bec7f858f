"""A client's CURVE keys for the daemon's TCP endpoints.

The client's own key pair lives in `$XDG_CONFIG_HOME/ctxkeep/curve/client.key_secret`
(created on first use); the server's public key comes from `CTXKEEP_SERVER_KEY`,
or from the curve folder when client and daemon share a machine.
"""

import os
from pathlib import Path

import zmq

from ..protocol import paths
from .errors import CtxkeepError


def client_pair(folder: Path | None = None) -> tuple[bytes, bytes]:
    """(public, secret) of this user's client key pair, created on first use."""
    import zmq.auth  # only TCP clients need it
    folder = folder or paths.curve_dir()
    secret_file = folder / "client.key_secret"
    if not secret_file.exists():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        zmq.auth.create_certificates(str(folder), "client")
    secret_file.chmod(0o600)
    public, secret = zmq.auth.load_certificate(str(secret_file))
    assert secret is not None
    return public, secret


def server_key(folder: Path | None = None) -> bytes:
    key = os.environ.get("CTXKEEP_SERVER_KEY")
    if key:
        return key.encode()
    local = (folder or paths.curve_dir()) / "server.key"
    if local.exists():
        import zmq.auth
        return zmq.auth.load_certificate(str(local))[0]
    raise CtxkeepError("no_server_key", "connecting over TCP needs the daemon's public key: set "
                                        "CTXKEEP_SERVER_KEY (the daemon's host prints it with `ctxkeep keys`)")


def secure(sock: zmq.Socket, endpoint: str) -> None:
    """Make `sock` a CURVE client when `endpoint` is TCP (the daemon serves TCP only with CURVE)."""
    if not endpoint.startswith("tcp://"):
        return
    public, secret = client_pair()
    sock.curve_serverkey = server_key()
    sock.curve_publickey = public
    sock.curve_secretkey = secret
