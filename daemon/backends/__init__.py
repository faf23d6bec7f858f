"""The model backend: Ollama through its official client."""
