"""What a request handler may use, built in one place (server/daemon.py `Daemon.open`)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ctxkeep.daemon.backends.protocol import ModelBackend
from ctxkeep.daemon.compaction.applier import Applier
from ctxkeep.daemon.compaction.automatic import AutoCompactor
from ctxkeep.daemon.compaction.checkpoints import Checkpointer
from ctxkeep.daemon.compaction.levels import LevelRunner
from ctxkeep.daemon.compaction.manual import Compactor
from ctxkeep.daemon.compaction.summary_record import SummaryRecord
from ctxkeep.daemon.config import Config
from ctxkeep.daemon.context.announce import Announcer
from ctxkeep.daemon.context.estimator import Estimator
from ctxkeep.daemon.context.listing import SessionListing
from ctxkeep.daemon.context.parts import Parts
from ctxkeep.daemon.context.prompt import TurnPrompts
from ctxkeep.daemon.context.speeds import Speeds
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.files.workers import FileReader
from ctxkeep.daemon.jobs.giving_way import GivingWay
from ctxkeep.daemon.jobs.queue import SessionJobs
from ctxkeep.daemon.memory.memory import Memory
from ctxkeep.daemon.recall.recaller import Recaller
from ctxkeep.daemon.retrieval.semantic import Embedder
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.turns.complete import Completer
from ctxkeep.daemon.turns.endings import Endings
from ctxkeep.daemon.turns.generation import Generations
from ctxkeep.daemon.turns.prepare import Preparer
from ctxkeep.protocol import paths
from ctxkeep.protocol.structs import DaemonStatus


@dataclass(frozen=True)
class Services:
    """The daemon's services, as the handlers see them (never the whole daemon)."""

    config: Config
    store: Store
    bus: EventBus
    backend: ModelBackend
    jobs: SessionJobs
    estimator: Estimator
    announcer: Announcer
    generations: Generations
    compactor: Compactor
    #: `session.list`'s answer, kept encoded until something changes.
    listing: SessionListing
    #: The daemon's status now (pid, uptime, counts, Ollama).
    status: Callable[[], DaemonStatus]
    #: True once SIGTERM was received: new work is refused.
    stopping: Callable[[], bool]
    #: The configuration file (`models.default` writes `default_model` into it).
    config_path: Path
    #: Reads @file references off the event loop (large ones in a worker process).
    files: FileReader
    #: Each model's reading and writing speed on this machine (`status` shows them).
    speeds: Speeds
    #: Recall's indexes and embeddings, for every session.
    recaller: Recaller
    #: Memory across sessions: what recall brings from the user's other sessions, and
    #: `memory.search`'s answers.
    memory: Memory
    #: How each model's summaries fared against the fact check (what `status` says of them).
    summaries: SummaryRecord


def build(config: Config, store: Store, bus: EventBus, backend: ModelBackend,
          status: Callable[[], DaemonStatus], stopping: Callable[[], bool],
          config_path: Path | None = None) -> Services:
    """Wire the services together (the one place that does)."""
    estimator = Estimator(store)
    jobs = SessionJobs(bus.publish)
    speeds = Speeds()
    announcer = Announcer(store, bus, estimator, config, jobs.busy, speeds)
    jobs.watch_busy(announcer.busy_changed)  # the announcer says when a session is busy
    parts = Parts(store, bus, backend, config, estimator, announcer, speeds)
    applier = Applier(parts)
    summaries = SummaryRecord()
    giving_way = GivingWay()  # background embedding waits while turns start
    embedder = Embedder(store, backend, lambda: config.embed_model, lambda: config.embed_builtin, giving_way)
    auto = AutoCompactor(parts, LevelRunner(parts, applier, Checkpointer(parts, summaries),
                                            vectors=embedder.passage_vectors))
    memory = Memory(store, embedder, config)
    bus.listen(memory.heard)  # memory learns of new messages, settings and deletions
    recaller = Recaller(store, estimator, config, embedder, memory)
    generations = Generations(parts, jobs, auto, Preparer(parts, auto, recaller, TurnPrompts()),
                              Completer(parts, recaller), Endings(store), giving_way)
    return Services(config=config, store=store, bus=bus, backend=backend, jobs=jobs,
                    estimator=estimator, announcer=announcer, generations=generations,
                    compactor=Compactor(parts, jobs, applier),
                    listing=SessionListing(store, jobs.busy_sessions),
                    status=status, stopping=stopping,
                    config_path=config_path or paths.config_path(), files=FileReader(),
                    speeds=parts.speeds, recaller=recaller, memory=memory, summaries=summaries)
