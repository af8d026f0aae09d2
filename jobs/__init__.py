"""APScheduler wiring (later issues)."""
