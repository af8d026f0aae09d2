"""Memory policy: save filter, recall, facts (later issues)."""
