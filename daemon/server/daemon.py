"""The daemon's life: the locks, the store, the sockets, start-up, reload, the Ollama
check, the systemd watchdog and shutdown. Requests are served by controller.py."""

import asyncio
import importlib
import logging
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

import zmq
import zmq.asyncio

from ctxkeep.daemon import services
from ctxkeep.daemon.backends.configured import backend_for
from ctxkeep.daemon.backends.hosts import Hosts
from ctxkeep.daemon.config import Config, ConfigError, apply_live, load
from ctxkeep.daemon.events.bus import EventBus
from ctxkeep.daemon.jobs.queue import SessionJobs
from ctxkeep.daemon.server import report, runtime, systemd
from ctxkeep.daemon.server.ollama_watch import watch_ollama
from ctxkeep.daemon.store.store import Store
from ctxkeep.daemon.transports.http.first_caller import OnFirstCaller
from ctxkeep.daemon.transports.http.listeners import Listeners, raise_descriptor_limit
from ctxkeep.daemon.transports.zmq import curve
from ctxkeep.daemon.transports.zmq.controller import Controller
from ctxkeep.daemon.transports.zmq.publisher import EventPublisher
from ctxkeep.protocol import DAEMON_VERSION, PROTOCOL_VERSION, ErrorCode
from ctxkeep.protocol.events import DaemonStatusEvent
from ctxkeep.protocol.paths import http_socket, http_token_path
from ctxkeep.protocol.structs import DaemonStatus

if TYPE_CHECKING:
    from ctxkeep.daemon.transports.http.server import FrontDoor

log = logging.getLogger(__name__)



class Daemon:
    """One running ctxkeepd."""

    def __init__(self, config: Config, config_path: Path | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.control_endpoint = config.resolved_control()
        self.events_endpoint = config.resolved_events()
        self.started = time.time()
        self.stopping = False
        self._stop = asyncio.Event()
        self.claim = runtime.Claim([self.control_endpoint, self.events_endpoint])
        self.context: zmq.asyncio.Context | None = None
        self.routers: list[tuple[zmq.asyncio.Socket, bool]] = []  # (socket, remote)
        self._auth: curve.AsyncioAuthenticator | None = None
        self._control_tasks: list[asyncio.Task[None]] = []
        self.store: Store
        self.bus: EventBus
        self.publisher: EventPublisher
        self.backend: Hosts
        self.jobs: SessionJobs
        self.services: services.Services

    # -- life cycle -------------------------------------------------------------

    def open(self) -> None:
        """Take the lock, open the store, bind the sockets. Raises on any obstacle."""
        raise_descriptor_limit()  # systemd's soft 1,024 would be spent by HTTP connections alone
        store_path = self.config.resolved_store()
        self.claim.take(store_path)
        adopted = self.claim.adopted
        self.store = Store.open(store_path)
        self.context = zmq.asyncio.Context()
        self.router = self._router(self.control_endpoint, adopted.get("ctl"))
        self.routers = [(self.router, False)]
        self.bus = EventBus()
        self.publisher = EventPublisher(self.context, self.bus, self.config.event_buffer_bytes, self.status,
                                        self.config.max_subscriptions, self.config.max_subscriptions_per_client)
        self.publisher.bind(self.events_endpoint, adopted.get("events"))
        if adopted:
            log.info("adopted sockets from systemd: %s", ", ".join(sorted(adopted)))
        self.claim.protect()
        if self.config.tcp_control or self.config.tcp_events:
            curve.check_authorized(self.config.resolved_curve_dir())  # fail before serving
        self.backend = backend_for(self.config)
        self.services = services.build(self.config, self.store, self.bus, self.backend,
                                       self.status, lambda: self.stopping, self.config_path)
        self.jobs = self.services.jobs
        self.controller = Controller(self.services, self.config.max_frame_bytes)
        self.http = Listeners(self.config, http_socket(self.control_endpoint), http_token_path(), adopted.get("http"))
        try:
            self.http.bind()
        except OSError as exc:
            raise runtime.RuntimeDirError(f"cannot serve HTTP on {self.http.listen or self.http.socket_path}: "
                                          f"{os.strerror(exc.errno) if exc.errno else exc}: free the port or change http_listen in "
                                          "config.toml") from None
        self.front_door: OnFirstCaller | None = None
        for session_id, seqs in self.store.history.recover(ErrorCode.DAEMON_RESTARTED.value):
            log.warning("session=%s: %d question(s) were left unanswered when ctxkeepd stopped; "
                        "marked interrupted", session_id, len(seqs))

    def _router(self, endpoint: str, fd: int | None = None, secure: bool = False) -> zmq.asyncio.Socket:
        assert self.context is not None
        router = self.context.socket(zmq.ROUTER)
        router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        router.setsockopt(zmq.LINGER, 500)
        # The socket-level cap only guards memory; the daemon itself answers
        # frames above max_frame_bytes with an error.
        router.setsockopt(zmq.MAXMSGSIZE, self.config.max_frame_bytes * 8)
        if fd is not None:
            router.setsockopt(zmq.USE_FD, fd)
        if secure:
            curve.make_server(router, self.config.resolved_curve_dir())
        try:
            router.bind(endpoint)
        except zmq.ZMQError:
            router.close(linger=0)
            raise
        return router

    def _open_tcp(self) -> None:
        """The optional TCP endpoints, CURVE only. Runs in the event loop, because the
        authenticator answers handshakes there; nothing is bound before it runs."""
        cfg = self.config
        if not (cfg.tcp_control or cfg.tcp_events):
            return
        folder = cfg.resolved_curve_dir()
        assert self.context is not None
        self._auth = curve.start_authenticator(self.context, folder)
        if cfg.tcp_control:
            self.routers.append((self._router(cfg.tcp_control, secure=True), True))
        if cfg.tcp_events:
            self.publisher.bind(cfg.tcp_events, secure=lambda sock: curve.make_server(sock, folder))
        log.info("remote clients on %s (CURVE; keys in %s)",
                 ", ".join(e for e in (cfg.tcp_control, cfg.tcp_events) if e), folder)

    def _status_line(self) -> str:
        return report.status_line(self.store.sessions.count(), self.backend)

    async def _watchdog(self, interval: float) -> None:
        """WATCHDOG=1 from the event loop itself, only while every control loop runs: if
        the loop hangs or a control loop died, the pings stop and systemd restarts us."""
        while True:
            dead = [t for t in self._control_tasks if t.done()]
            if dead:
                log.critical("a control loop stopped (%r): no more watchdog pings, so systemd "
                             "restarts ctxkeepd", dead[0].exception() if not dead[0].cancelled() else None)
                self.stop()
                return
            systemd.notify("WATCHDOG=1")
            await asyncio.sleep(interval)

    def reload(self) -> None:
        """SIGHUP: re-read the configuration; apply what can change live."""
        try:
            new = load(self.config_path)
        except ConfigError as exc:
            log.error("reload failed, keeping the running configuration: %s", exc)
            systemd.notify(f"STATUS=reload failed: {exc}")
            return
        applied, restart = apply_live(self.config, new)
        log.info("configuration reloaded: %s%s", ("applied " + ", ".join(applied)) if applied else "nothing changed",
                 f"; needs a restart to apply: {', '.join(restart)}" if restart else "")
        systemd.notify("RELOADING=0", self._status_line())
        self.bus.publish(DaemonStatusEvent(status=self.status()))

    async def serve(self, ready: "asyncio.Future[None] | None" = None, signals: bool = True) -> None:
        """Serve until SIGTERM/SIGINT or `stop()`, then drain and close. Without `signals`
        (a daemon in a thread of another program, as the tests run one) no signal is taken."""
        loop = asyncio.get_running_loop()
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
            loop.add_signal_handler(signal.SIGHUP, self.reload)
        self.backend.preload()  # the ollama package imports in a thread while we serve
        try:
            self._open_tcp()
        except zmq.ZMQError as exc:
            raise runtime.RuntimeDirError(
                f"cannot listen on {self.config.tcp_control or self.config.tcp_events}: {exc}: "
                "free the port or change tcp_control / tcp_events in config.toml") from None
        tasks = self._control_tasks = [
            asyncio.create_task(self.controller.serve(router, remote), name="control")
            for router, remote in self.routers]
        tasks += [asyncio.create_task(serve(sock), name=serve.__name__)
                  for sock in self.publisher.sockets
                  for serve in (self.publisher.serve_subscriptions, self.publisher.serve_connections)]
        tasks.append(asyncio.create_task(watch_ollama(
            self.backend, self.services.recaller.embedder.retry, self._ollama_changed), name="ollama-check"))
        self.front_door = OnFirstCaller(self.http, self._open_front_door)
        self.front_door.watch()
        await self.services.memory.ready()  # memory's index, read in the background
        interval = systemd.watchdog_interval()
        if interval:
            tasks.append(asyncio.create_task(self._watchdog(interval), name="watchdog"))
        log.info("ctxkeepd %s ready: control %s, events %s, store %s", DAEMON_VERSION,
                 self.control_endpoint, self.events_endpoint, self.store.path)
        systemd.notify("READY=1", f"STATUS=serving on {self.control_endpoint}")
        if ready is not None:
            ready.set_result(None)
        await self._stop.wait()
        self.stopping = True
        systemd.notify("STOPPING=1", "STATUS=stopping: finishing running work")
        log.info("stopping: finishing running generations")
        await self.jobs.drain(self.config.drain_timeout)
        if self.front_door is not None:
            await self.front_door.close()
        self.bus.publish(DaemonStatusEvent(status=self.status(), stopping=True))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.services.recaller.close()
        await self.services.memory.close()
        await self.services.recaller.embedder.close()
        await self.backend.close()
        self.services.files.close()
        self.close()
        log.info("stopped")

    async def _open_front_door(self) -> "FrontDoor":
        """The HTTP front door, serving the sockets `open` bound, opened for its first caller
        (first_caller.py). Its modules (aiohttp's import alone is ~0.1 s of CPU) are imported
        in a thread while the control socket answers; the caller waits in the backlog."""
        server = await asyncio.to_thread(importlib.import_module, "ctxkeep.daemon.transports.http.server")
        door: FrontDoor = server.FrontDoor(self.services, self.http)
        await door.start()
        return door

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        """Close sockets and store, remove socket files, release the lock."""
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        for router, _ in self.routers:
            router.close()
        if hasattr(self, "publisher"):
            self.publisher.close()
        if self.context is not None:
            self.context.term()
        if hasattr(self, "store"):
            self.store.close()
        if hasattr(self, "http"):
            self.http.close()
        self.claim.release()

    def _ollama_changed(self) -> None:
        systemd.notify(self._status_line())
        self.bus.publish(DaemonStatusEvent(status=self.status()))  # clients learn it too

    def status(self) -> DaemonStatus:
        return DaemonStatus(
            version=DAEMON_VERSION, protocol=PROTOCOL_VERSION, pid=os.getpid(),
            started=self.started, uptime=time.time() - self.started,
            sessions=self.store.sessions.count(), generations_running=self.jobs.running("generation"),
            control_endpoint=self.control_endpoint, events_endpoint=self.events_endpoint,
            store_path=str(self.store.path), last_seq=self.bus.last_seq,
            ollama=self.backend.status, backends=self.backend.hosts(), default_model=self.config.default_model,
            default_model_installed=report.default_installed(self.backend, self.config.default_model),
            recall=self.services.recaller.status(),
            http_socket=str(self.http.socket_path), http_url=self.http.url,
            http_auth="token" if self.http.token else "none",
            speeds=report.model_speeds(self.services), summaries=report.model_summaries(self.services))

    # -- requests ---------------------------------------------------------------
