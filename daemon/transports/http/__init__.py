"""The HTTP front door: Ollama's and OpenAI's HTTP APIs, translated to the engine's
handlers and events (server.py listens; ollama_api.py and openai_api.py translate)."""
