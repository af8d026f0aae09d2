"""Bytes on disk: daily Markdown logs, longterm.md, the clock. No policy."""
