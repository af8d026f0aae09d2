"""Modal and full screens."""
