"""What each event subscriber holds: subscription limits per connection and in all.

The event socket applies subscriptions itself (`XPUB_MANUAL`); this ledger
decides which to apply. A connection is named by its socket and the file
descriptor ZeroMQ read the subscription from (`SRCFD`); the socket monitor
says when that descriptor's connection ends. ZeroMQ itself sends an
unsubscription (with no descriptor) for every prefix a departed subscriber
held, which keeps the shared counts exact.

libzmq keeps a copy of every subscription a connection sends, applied or not,
until that connection ends (so it can unsubscribe it then). So refusing is not
enough to bound memory: a connection that keeps subscribing past the limits
(`CUT_AFTER_REFUSALS` refused) is closed, which frees all it made libzmq hold.
Prefixes longer than `MAX_PREFIX_BYTES` never get that far: the socket's
`MAXMSGSIZE` drops their connection before they are read.
"""

from collections import Counter

#: The longest subscription prefix (topics are `<subject>/<session id>`, under 40 bytes).
MAX_PREFIX_BYTES = 64
#: Subscriptions refused to one connection before it is closed.
CUT_AFTER_REFUSALS = 32

#: A connection: (which event socket, the descriptor of the connection on it); None where
#: the monitor has not told which connection a subscription came on.
Client = tuple[int, int]


class SubscriptionLedger:
    """Counts subscriptions per prefix and per connection, and refuses what is over a limit."""

    def __init__(self, max_total: int, max_per_client: int) -> None:
        self.max_total = max_total
        self.max_per_client = max_per_client
        self.total = 0
        self._holders: Counter[bytes] = Counter()
        self._clients: dict[Client | None, set[bytes]] = {}
        self._refused: Counter[Client | None] = Counter()

    def refusal(self, client: Client | None, prefix: bytes) -> str:
        """Why `prefix` from `client` must not be applied ("" when it may)."""
        if len(prefix) > MAX_PREFIX_BYTES:
            return f"a subscription prefix of {len(prefix):,} bytes (at most {MAX_PREFIX_BYTES})"
        held = self._clients.get(client, set())
        if prefix in held:
            return ""
        if len(held) >= self.max_per_client:
            return (f"a subscription past the limit of {self.max_per_client:,} per connection "
                    "(max_subscriptions_per_client)")
        if self.total >= self.max_total:
            return (f"a subscription past the limit of {self.max_total:,} at once "
                    "(max_subscriptions)")
        return ""

    def hog(self, newcomer: Client | None) -> Client | None:
        """At the total limit: the connection holding the most subscriptions, when it holds
        more than `newcomer` would with one more (it gives way, so that no one program's
        many connections can lock every other client out of events); None if none does."""
        if self.total < self.max_total or not self._clients:
            return None
        most = max(self._clients, key=lambda c: len(self._clients[c]))
        if most == newcomer or most is None or len(self._clients[most]) <= self.held_by(newcomer) + 1:
            return None
        return most

    def refused(self, client: Client | None) -> bool:
        """Count a refusal to `client`; True when it has had enough to be closed."""
        self._refused[client] += 1
        return client is not None and self._refused[client] >= CUT_AFTER_REFUSALS

    def add(self, client: Client | None, prefix: bytes) -> None:
        """Record an applied subscription (a client's repeat of one it holds counts once,
        as ZeroMQ applies it once)."""
        held = self._clients.setdefault(client, set())
        if prefix not in held:
            held.add(prefix)
            self._holders[prefix] += 1
            self.total += 1

    def remove(self, client: Client | None, prefix: bytes) -> None:
        """Record an unsubscription: from a live client (`client` known), or one ZeroMQ sends
        for a subscriber that left (`client` None: it counts against the prefix only)."""
        if client is not None:
            held = self._clients.get(client)
            if held is None or prefix not in held:
                return
            held.discard(prefix)
        if self._holders[prefix] > 0:
            self._holders[prefix] -= 1
            self.total -= 1
            if not self._holders[prefix]:
                del self._holders[prefix]

    def client_left(self, client: Client) -> None:
        """Forget a connection's own list (its prefixes are released by ZeroMQ's
        unsubscriptions, see `remove`)."""
        self._clients.pop(client, None)
        self._refused.pop(client, None)

    def held_by(self, client: Client | None) -> int:
        return len(self._clients.get(client, ()))
