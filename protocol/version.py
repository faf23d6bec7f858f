"""Version numbers carried on the wire."""

#: Bumped on any change a peer cannot ignore. Every request and reply carries it as `v`.
PROTOCOL_VERSION = 1

#: The release of this package, reported by `hello` and `status`.
DAEMON_VERSION = "0.1.0"
