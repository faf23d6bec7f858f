"""The daemon's model backend, made from its configuration."""

import asyncio

from ctxkeep.daemon.backends.host import Host
from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.config import Config


def backend_for(config: Config) -> Hosts:
    """The daemon's backend: the [[backends]] of `config`, or one Ollama at ollama_host."""
    from ctxkeep.daemon.backends.backend import OllamaBackend
    from ctxkeep.daemon.backends.openai_backend import OpenAIBackend
    changed = asyncio.Event()
    timeouts = (config.connect_timeout, config.read_timeout)
    if not config.backends:
        return Hosts([Host(OllamaBackend(config.resolved_ollama_host(), *timeouts, changed=changed))])
    members = []
    for b in config.backends:
        backend = (OllamaBackend(b.url.rstrip("/"), *timeouts, name=b.name, changed=changed) if b.kind == "ollama"
                   else OpenAIBackend(b.name, b.url, *timeouts, key=b.key, context_length=b.context_length,
                                      changed=changed))
        members.append(Host(backend, tuple(b.models)))
    return Hosts(members)
