"""The daemon as a whole, as `status` shows it."""

import msgspec

from .counts import Count
from .servers import BackendStatus, OllamaStatus


class ModelSpeed(msgspec.Struct, kw_only=True):
    """How fast a model reads prompts and writes answers here, in tokens a second (0: not
    measured yet), from the model server's timings of its answers."""

    model: str
    read: float = 0.0
    write: float = 0.0
    #: The most tokens recall's block may take for this model here: what it reads in
    #: `recall_read_seconds` (0: no bound).
    recall_tokens: int = 0


class ModelSummaries(msgspec.Struct, kw_only=True):
    """A model whose summaries are not asked for as usual: the last ones it wrote lost what
    they replaced (names, numbers, dates), and what stands in for them now."""

    model: str
    note: str


class DaemonStatus(msgspec.Struct, kw_only=True):
    """The daemon as a whole."""

    version: str
    protocol: int
    pid: int
    started: float
    uptime: float
    sessions: Count
    generations_running: Count
    control_endpoint: str
    events_endpoint: str
    store_path: str
    #: The last event sequence number published (events are numbered from 1).
    last_seq: Count
    #: The model servers as one: reachable while any of them is.
    ollama: OllamaStatus
    #: Each model server, in config order.
    backends: list[BackendStatus] = []
    #: The model of new sessions that name none (`models.default` changes it).
    default_model: str = ""
    #: Whether Ollama has the default model, as its model list last said (null: not known).
    default_model_installed: bool | None = None
    #: How recall ranks: by words and meaning, by words only (and why), or off.
    recall: str = ""
    #: The HTTP front door (Ollama's and OpenAI's APIs): its Unix socket, and its TCP URL
    #: ("" when http_listen is not set).
    http_socket: str = ""
    http_url: str = ""
    #: Whether HTTP over TCP needs the bearer token ("token") or not ("none").
    http_auth: str = ""
    #: How fast each model answered on this machine since the daemon started (from the
    #: servers' timings): what compactions and waits are predicted from.
    speeds: list[ModelSpeed] = []
    #: The models whose summaries failed the fact check often enough that they are no
    #: longer asked as usual (since the daemon started).
    summaries: list[ModelSummaries] = []
