"""CURVE security for the optional TCP endpoints.

The server's key pair is created at first use in the curve folder
(`server.key`, and `server.key_secret` mode 0600). Clients are admitted by
their public key, listed one per line in `authorized_keys` (`KEY name`); the
list is read at every connection, so `ctxkeep keys add` takes effect at once.
TCP without any authorized key is refused at start-up.

    ctxkeepd keys [show | add KEY [NAME] | remove KEY]   (what `ctxkeep keys` runs)
"""

from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.asyncio import AsyncioAuthenticator

SERVER = "server"
AUTHORIZED = "authorized_keys"


class CurveError(Exception):
    """TCP cannot be served securely; the message says what to do."""


def key_pair(folder: Path, name: str) -> tuple[bytes, bytes]:
    """(public, secret) Z85 keys of `name` in `folder`, created on first use."""
    secret_file = folder / f"{name}.key_secret"
    if not secret_file.exists():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        zmq.auth.create_certificates(str(folder), name)
    secret_file.chmod(0o600)
    public, secret = zmq.auth.load_certificate(str(secret_file))
    assert secret is not None
    return public, secret


def authorized(folder: Path) -> dict[bytes, str]:
    """Authorized client public keys -> their names."""
    path = folder / AUTHORIZED
    keys = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split(None, 1)
            if parts and not parts[0].startswith("#"):
                keys[parts[0].encode()] = parts[1].strip() if len(parts) > 1 else ""
    return keys


def add(folder: Path, key: str, name: str = "") -> None:
    if len(key) != 40:
        raise CurveError(f"{key!r} is not a CURVE public key (40 Z85 characters)")
    zmq.utils.z85.decode(key.encode())  # raises on a malformed key
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if key.encode() not in authorized(folder):
        with (folder / AUTHORIZED).open("a") as f:
            f.write(f"{key} {name}\n".rstrip() + "\n")
        (folder / AUTHORIZED).chmod(0o600)


def remove(folder: Path, key: str) -> bool:
    path = folder / AUTHORIZED
    if not path.exists():
        return False
    lines = path.read_text().splitlines()
    kept = [line for line in lines if line.split(None, 1)[:1] != [key]]
    path.write_text("".join(f"{line}\n" for line in kept))
    return len(kept) != len(lines)


class _Admit:
    """ZAP callback: admit a CURVE client whose public key is authorized."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def callback(self, domain: str, key: bytes) -> bool:
        """`key` is the client's public key, Z85-encoded by pyzmq's authenticator."""
        return key in authorized(self.folder)


def check_authorized(folder: Path) -> None:
    """Refuse TCP when no client key is authorized."""
    if not authorized(folder):
        raise CurveError(
            f"a TCP endpoint is configured but no client key is authorized in {folder / AUTHORIZED}: "
            "run `ctxkeep keys add CLIENT_PUBLIC_KEY` (a client prints its key with `ctxkeep keys`), "
            "or remove tcp_control/tcp_events from config.toml")


def start_authenticator(context: zmq.asyncio.Context, folder: Path) -> AsyncioAuthenticator:
    """Check every CURVE handshake against the authorized keys (call in the running loop)."""
    check_authorized(folder)
    auth = AsyncioAuthenticator(context)
    auth.start()
    auth.configure_curve_callback(domain="ctxkeep", credentials_provider=_Admit(folder))
    return auth


def make_server(sock: zmq.Socket, folder: Path) -> None:
    """Make `sock` a CURVE server with the daemon's key pair."""
    public, secret = key_pair(folder, SERVER)
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_server = True
    sock.zap_domain = b"ctxkeep"
    sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)  # no authenticator: no admission


def describe(folder: Path) -> str:
    """The daemon's public key and the authorized client keys, for people."""
    public, _ = key_pair(folder, SERVER)
    lines = [f"server public key: {public.decode()}",
             f"  (remote clients set CTXKEEP_SERVER_KEY={public.decode()})"]
    keys = authorized(folder)
    lines.append(f"authorized clients ({folder / AUTHORIZED}):" if keys else
                 "authorized clients: none (add one with `ctxkeep keys add KEY [NAME]`)")
    lines += [f"  {key.decode()} {name}".rstrip() for key, name in keys.items()]
    return "\n".join(lines)
