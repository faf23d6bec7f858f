"""The model servers: Ollama through its official client, OpenAI-compatible servers (llama.cpp,
vLLM, LM Studio) through `openai`'s, and several of them as one (hosts.py, routing.py)."""
