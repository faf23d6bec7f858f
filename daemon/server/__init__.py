"""The daemon as a process: its life (locks, start-up, reload, the Ollama check, shutdown), its runtime folder and systemd."""
