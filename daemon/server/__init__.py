"""The daemon's process: sockets, requests, events, start-up and shutdown."""
