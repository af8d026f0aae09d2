"""The turn: Ollama gateway, prompt assembly, the turn pipeline."""
