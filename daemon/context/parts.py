"""What the engine's workers are built from, wired once (services.build)."""

from dataclasses import dataclass, field

from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.served import LastPrompts
from ctxkeep.daemon.context.speeds import Speeds
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.store.store import Store


@dataclass(frozen=True)
class Parts:
    """The parts every worker of the engine (a turn, a compaction) uses: the store, the
    event bus, the model backend, the configuration, the token estimator, the
    announcer that tells clients a session changed, each model's measured speeds, and the
    prompt each model's server read last (a summary may continue it)."""

    store: Store
    bus: EventBus
    backend: ModelBackend
    config: Config
    estimator: Estimator
    announcer: Announcer
    speeds: Speeds = field(default_factory=Speeds)
    served: LastPrompts = field(default_factory=LastPrompts)
