"""Data the tests share with the benchmarks (the benchmarks import it, not the reverse)."""
