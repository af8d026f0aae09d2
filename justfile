# Straylight task runner (`just --list`).

# Start the chat TUI (extra arguments go to `straylight`).
run *ARGS:
    straylight {{ARGS}}

# The whole test suite: unit, pilot, snapshot and CLI tests.
test *ARGS:
    python -m pytest -q {{ARGS}}

# Scaling of the memory from 1k to 1M points, with plots in bench/results/ (~40 min at 1M; needs the bench extra).
scaling sizes="1000,10000,100000,1000000":
    nice -n 10 python -m bench.scaling --sizes {{sizes}}

# The reliability suite, including its cases over a minute (crash loops; `just test` runs the rest).
reliability *ARGS:
    python -m pytest -q -m "slow or not slow" tests/reliability {{ARGS}}

# Long fuzzing runs (hypothesis, many more examples) of the log parser, save filter, masker, doc splitter.
fuzz *ARGS:
    HYPOTHESIS_PROFILE=fuzz python -m pytest -q -m "slow or not slow" tests/reliability/test_fuzz.py {{ARGS}}

# Lint, format check and type check (mypy, configured in pyproject.toml).
lint:
    ruff check .
    ruff format --check .
    mypy

# Format the code in place.
fmt:
    ruff format .
    ruff check --fix .

# Benchmarks: start-up, streaming, memory at 10k/100k points, fact classifier, memory browser at 100k, secret masking (LoCoMo: `python bench/locomo.py FILE`).
bench:
    python -m bench.run_all
