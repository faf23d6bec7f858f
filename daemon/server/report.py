"""What the daemon says of itself beside its status: the line systemd shows, whether the
default model is installed, each model's measured speeds, and the models whose summaries
are not asked for as usual (daemon.py assembles them)."""

from ctxkeep.daemon.backends.facts import same_model
from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.services import Services
from ctxkeep.protocol.structs import ModelSpeed, ModelSummaries


def status_line(sessions: int, backend: Hosts) -> str:
    """systemd's STATUS= line: the sessions and whether the model servers answer."""
    counted = f"STATUS={sessions} sessions"
    hosts = backend.hosts()
    if len(hosts) > 1 or hosts[0].kind != "ollama":
        return f"{counted}, model servers: " + ", ".join(
            f"{h.name} {'up' if h.reachable else 'DOWN'}" for h in hosts)
    ollama = backend.status
    reach = (f"Ollama {ollama.version} reachable".replace("  ", " ") if ollama.reachable
             else "Ollama NOT reachable")
    return f"{counted}, {reach} at {ollama.host}"


def default_installed(backend: Hosts, default_model: str) -> bool | None:
    """Whether the servers list the default model (None: not listed yet)."""
    if backend.listed is None:
        return None
    return any(same_model(name, default_model) for name in backend.listed)


def model_summaries(services: Services) -> list[ModelSummaries]:
    """The models whose summaries are not asked for as usual, and what stands in."""
    return [ModelSummaries(model=m, note=n) for m, n in services.summaries.notes().items()]


def model_speeds(services: Services) -> list[ModelSpeed]:
    """Each model measured so far: its reading and writing speed here, and the bound that
    puts on recall's block."""
    return [ModelSpeed(model=m, read=round(s.read, 1), write=round(s.write, 1),
                       recall_tokens=services.announcer.recall_read(m) or 0)
            for m, s in sorted(services.speeds.measured().items())]
