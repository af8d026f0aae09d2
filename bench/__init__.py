"""Benchmarks (`just bench`)."""
