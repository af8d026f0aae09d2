"""Textual app and the command-line entry (`straylight …`)."""
