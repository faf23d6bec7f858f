"""The ZeroMQ transport: the control ROUTER (requests in, replies out) and the XPUB that publishes events."""
