"""Choose the USearch parameters of `store.vector_index` on embedding-like data.

Builds `VectorIndex`es (through `rebuild`, the path the app uses) over n 768-d vectors and
measures, for each configuration (dtype, connectivity, expansion_add) and each
expansion_search: recall@5 and recall@10 against exact float32 cosine search, single-query
search latency (p50 / p95), build throughput, one-at-a-time add latency (the path after each
turn), file size, and `estimate_index_bytes`. Then it picks defaults by a fixed rule (`choose`),
applied to the hardest data set measured:

    1. recall@10 >= 0.95 and search p95 <= 5 ms;
    2. among those, the smallest file (memory follows it), then the smallest expansion_search,
       then the highest recall, then the fastest build;
    3. at 20k many configurations saturate (recall ~1.0), so with `--confirm-n` the two
       fastest-building configurations of the chosen dtype and connectivity are measured again
       at that size and rule 2 picks between them: the index is built for 100k points;
    4. the default expansion_search is one doubling above the smallest passing value: these
       data are easier than some embedding sets (DEPENDENCIES.md: 0.81 recall@5 at 64 on
       another set) and the doubling costs ~0.1 ms per search.

The data are synthetic but not uniform random (uniform 768-d points have no near neighbours:
recall@10 at expansion_search 64 is 0.41 there, an unrealistic worst case). A hierarchy
topic → subtopic → thread → point in a latent space with a decaying spectrum, projected to
768-d, plus a shared mean direction (embeddings are anisotropic) and isotropic noise, normalised.
Queries are held out from the same draw, as a new message is. The two profiles were fitted at
9.3k × 384 to all-MiniLM-L6-v2 embeddings of the LoCoMo turns and their sentences (real):

    matched  fitted to the statistics: random-pair cosine 0.13 (real 0.14), nearest 0.78 (0.76),
             10th-nearest 0.58 (0.58), variance in the first 10/50/100 principal components
             0.32/0.61/0.74 (0.27/0.62/0.79). HNSW finds its neighbours more easily than the
             real ones: recall@10 at expansion_search 8/16 0.97/0.99 (real 0.91/0.95).
    hard     fitted to that recall curve instead: 0.89/0.95 at 8/16 (its statistics are
             further off: nearest 0.49, 10th 0.38). The rule is applied to this one.

On the real set itself (`--vectors`, 9.2k × 384, f16, M 16, ef_add 128) recall@10 was
0.994 / 0.998 / 0.999 at expansion_search 64 / 128 / 256.

    python -m bench.vector_index_params [--n 20000] [--queries 500] [--profile both]
                                        [--grid full|quick] [--confirm-n 100000]
                                        [--vectors FILE.npy] [--json PATH]

`--confirm-n` re-measures the two finalists (rule 3) at a larger size on the hard profile
(100k × 768: ~40 s per build on 2 cores, ~2 min in all). `--vectors` benchmarks real
embeddings from a .npy matrix instead (queries are held out from it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench._common import format_machine, machine_info, write_json
from store.vector_arrays import exact_search, normalize_rows
from store.vector_index import IndexDType, VectorIndex, estimate_index_bytes

NDIM = 768
SUBTOPICS = 6
EXPANSION_SEARCH = (64, 128, 256)
RECALL_TARGET = 0.95
P95_LIMIT_MS = 5.0
SINGLE_ADDS = 100

Config = tuple[IndexDType, int, int]  # dtype, connectivity, expansion_add
FULL_GRID: tuple[Config, ...] = (
    ("f16", 16, 128),
    ("f32", 16, 128),
    ("f16", 32, 128),
    ("f16", 16, 64),
    ("f16", 16, 256),
    ("f16", 32, 64),
)
QUICK_GRID: tuple[Config, ...] = (("f16", 16, 128), ("f32", 16, 128))


@dataclass
class Row:
    data: str
    n: int
    dtype: str
    connectivity: int
    expansion_add: int
    expansion_search: int
    recall_at_5: float
    recall_at_10: float
    search_p50_ms: float
    search_p95_ms: float
    build_s: float
    build_per_s: float
    single_add_p50_ms: float
    file_mb: float
    estimate_mb: float


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class Profile:
    """Knobs of the synthetic generator (see the module docstring)."""

    latent: int  # dimensions of the topic space
    spectrum_power: float  # variance of latent axis j falls as (1 + j) ** -power
    points_per_topic: int
    spread: float  # of a thread's centre around its subtopic
    thread_spread: float  # of a point around its thread's centre
    thread_size: int  # points per thread, on average
    noise: float  # isotropic noise, relative to the unit-length signal
    mean_weight: float  # the shared direction all embeddings lean towards


PROFILES = {
    # Matches all-MiniLM-L6-v2 on LoCoMo in its statistics (random-pair cosine, nearest and
    # 10th-nearest cosine, variance in the first 10/50/100 principal components).
    "matched": Profile(256, 0.35, 500, 1.0, 0.3, 2, 0.5, 0.4),
    # Fitted instead to the real embeddings' recall at small beams (HNSW finds their
    # neighbours harder than the matched profile's); flatter spectrum, noisier threads.
    "hard": Profile(384, 0.0, 500, 1.0, 0.5, 3, 1.1, 0.5),
}


@dataclass
class Topics:
    profile: Profile
    basis: npt.NDArray[np.float64]
    spectrum: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]
    centers: npt.NDArray[np.float64]  # (topics * SUBTOPICS, latent)


def make_topics(n: int, profile: Profile, seed: int, ndim: int = NDIM) -> Topics:
    rng = np.random.default_rng(seed)
    topics = max(8, n // profile.points_per_topic)
    basis = np.linalg.qr(rng.standard_normal((ndim, profile.latent)))[0].T
    spectrum = np.power(1.0 + np.arange(profile.latent, dtype=np.float64), -profile.spectrum_power)
    mean = rng.standard_normal(ndim)
    mean /= np.linalg.norm(mean)
    topic_z = rng.standard_normal((topics, profile.latent))
    sub_z = topic_z[:, None, :] + 0.7 * rng.standard_normal((topics, SUBTOPICS, profile.latent))
    return Topics(profile, basis, spectrum, mean, sub_z.reshape(-1, profile.latent))


def sample(topics: Topics, n: int, seed: int) -> npt.NDArray[np.float32]:
    """n normalised embedding-like vectors: topic → subtopic → thread → point."""
    p = topics.profile
    rng = np.random.default_rng(seed)
    threads = max(1, n // p.thread_size)
    centres = topics.centers[rng.integers(0, len(topics.centers), threads)]
    centres = centres + p.spread * rng.standard_normal((threads, p.latent))
    z = centres[rng.integers(0, threads, n)] + p.thread_spread * rng.standard_normal((n, p.latent))
    x = (z * topics.spectrum) @ topics.basis
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x += p.mean_weight * topics.mean + p.noise * rng.standard_normal(x.shape) / np.sqrt(x.shape[1])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def split_data(
    n: int, queries_n: int, profile: str, seed: int, vectors: Path | None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(stored, held-out queries, extra points for single adds), drawn together and split."""
    if vectors is not None:
        pool = normalize_rows(np.load(vectors))
    else:
        pool = sample(
            make_topics(n, PROFILES[profile], seed), n + queries_n + SINGLE_ADDS, seed + 1
        )
    order = np.random.default_rng(seed + 2).permutation(len(pool))
    queries = pool[order[:queries_n]]
    extra = pool[order[queries_n : queries_n + SINGLE_ADDS]]
    stored = pool[order[queries_n + SINGLE_ADDS :]][:n]
    return stored, queries, extra


def exact_truth(
    data: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], k: int
) -> npt.NDArray[np.intp]:
    """Exact top-k row numbers per query (float32 cosine; rows are unit length)."""
    sims = queries @ data.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


# ---------------------------------------------------------------- measurement


def measure_search(
    index: VectorIndex, queries: npt.NDArray[np.float32], truth: npt.NDArray[np.intp]
) -> tuple[float, float, float, float]:
    """recall@5, recall@10, p50 ms, p95 ms over single-query searches."""
    hits5 = hits10 = 0
    times: list[float] = []
    for q, expected in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = index.search(q, 10)
        times.append((time.perf_counter() - started) * 1000)
        keys = [key for key, _ in found]
        hits5 += len(set(keys[:5]) & set(expected[:5].tolist()))
        hits10 += len(set(keys) & set(expected.tolist()))
    count = len(queries)
    p50, p95 = np.percentile(np.asarray(times), [50, 95])
    return hits5 / (5 * count), hits10 / (10 * count), float(p50), float(p95)


def measure_single_adds(
    index: VectorIndex, extra: npt.NDArray[np.float32], first_key: int
) -> float:
    times: list[float] = []
    for offset, vector in enumerate(extra):
        started = time.perf_counter()
        index.add([first_key + offset], vector)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


@dataclass
class Workload:
    name: str
    stored: npt.NDArray[np.float32]
    queries: npt.NDArray[np.float32]
    extra: npt.NDArray[np.float32]
    truth: npt.NDArray[np.intp]


def bench_config(config: Config, work: Workload, folder: Path) -> list[Row]:
    dtype, connectivity, expansion_add = config
    n, ndim = work.stored.shape
    path = folder / f"{dtype}-{connectivity}-{expansion_add}-{n}.usearch"
    index = VectorIndex(
        path, ndim, dtype=dtype, connectivity=connectivity, expansion_add=expansion_add
    )
    started = time.perf_counter()
    index.rebuild(np.arange(n), work.stored)
    build_s = time.perf_counter() - started
    file_mb = path.stat().st_size / 1e6
    rows = []
    for expansion_search in EXPANSION_SEARCH:
        index.set_expansion_search(expansion_search)
        r5, r10, p50, p95 = measure_search(index, work.queries, work.truth)
        rows.append(
            Row(
                data=work.name,
                n=n,
                dtype=dtype,
                connectivity=connectivity,
                expansion_add=expansion_add,
                expansion_search=expansion_search,
                recall_at_5=r5,
                recall_at_10=r10,
                search_p50_ms=p50,
                search_p95_ms=p95,
                build_s=build_s,
                build_per_s=n / build_s,
                single_add_p50_ms=0.0,
                file_mb=file_mb,
                estimate_mb=estimate_index_bytes(n, ndim, dtype, connectivity) / 1e6,
            )
        )
    add_ms = measure_single_adds(index, work.extra, n)
    for row in rows:
        row.single_add_p50_ms = add_ms
        print(format_row(row), flush=True)
    path.unlink()
    return rows


def exact_latency(work: Workload) -> float:
    """Median ms of `exact_search` over pre-normalised rows (the fallback path)."""
    rows = normalize_rows(work.stored)
    ids = np.arange(len(rows))
    times = []
    for q in work.queries[:100]:
        started = time.perf_counter()
        exact_search(q, ids, rows, 10, normalized=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def make_workload(
    n: int, queries_n: int, profile: str, seed: int, vectors: Path | None
) -> Workload:
    stored, queries, extra = split_data(n, queries_n, profile, seed, vectors)
    name = vectors.stem if vectors is not None else profile
    return Workload(name, stored, queries, extra, exact_truth(stored, queries, 10))


def run(work: Workload, grid: tuple[Config, ...]) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="vector-index-bench-") as tmp:
        for config in grid:
            rows += bench_config(config, work, Path(tmp))
    print(f"exact_search p50 at n={len(work.stored)} ({work.name}): {exact_latency(work):.2f} ms")
    return rows


# ---------------------------------------------------------------- choice and output


def choose(rows: list[Row]) -> Row | None:
    """Rules 1-3 of the module docstring: the passing row that is cheapest, then best."""
    good = [r for r in rows if r.recall_at_10 >= RECALL_TARGET and r.search_p95_ms <= P95_LIMIT_MS]
    if not good:
        return None
    return min(
        good,
        key=lambda r: (round(r.file_mb, 1), r.expansion_search, -r.recall_at_10, r.build_s),
    )


def finalists(rows: list[Row], chosen: Row) -> tuple[Config, ...]:
    """The two fastest-building configurations with the chosen dtype and connectivity."""
    same = {
        config_of(r): r.build_s
        for r in rows
        if r.data == chosen.data
        and (r.dtype, r.connectivity) == (chosen.dtype, chosen.connectivity)
    }
    return tuple(sorted(same, key=lambda c: same[c])[:2])


def with_margin(expansion_search: int) -> int:
    """Rule 4: one doubling above the smallest passing beam."""
    return min(2 * expansion_search, max(EXPANSION_SEARCH))


def describe(row: Row) -> str:
    return (
        f"dtype={row.dtype} connectivity={row.connectivity} expansion_add={row.expansion_add}"
        f" expansion_search={row.expansion_search} (recall@10 {row.recall_at_10:.3f})"
    )


def config_of(row: Row) -> Config:
    return (row.dtype, row.connectivity, row.expansion_add)  # type: ignore[return-value]


HEADER = (
    f"{'data':>8} {'n':>6} {'dtype':>5} {'M':>3} {'ef_add':>6} {'ef_srch':>7} {'rec@5':>6}"
    f" {'rec@10':>6} {'p50ms':>6} {'p95ms':>6} {'build_s':>7} {'add/s':>6} {'add1ms':>6}"
    f" {'fileMB':>7} {'estMB':>6}"
)


def format_row(r: Row) -> str:
    return (
        f"{r.data:>8} {r.n:>6} {r.dtype:>5} {r.connectivity:>3} {r.expansion_add:>6}"
        f" {r.expansion_search:>7} {r.recall_at_5:>6.3f} {r.recall_at_10:>6.3f}"
        f" {r.search_p50_ms:>6.2f} {r.search_p95_ms:>6.2f} {r.build_s:>7.1f}"
        f" {r.build_per_s:>6.0f} {r.single_add_p50_ms:>6.2f} {r.file_mb:>7.1f}"
        f" {r.estimate_mb:>6.1f}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--profile", choices=(*PROFILES, "both"), default="both")
    parser.add_argument("--grid", choices=("full", "quick"), default="full")
    parser.add_argument("--confirm-n", type=int, default=0, help="re-measure the choice at n")
    parser.add_argument("--vectors", type=Path, help="a .npy matrix of real embeddings")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = machine_info()
    print(format_machine(info))
    print(HEADER, flush=True)
    grid = FULL_GRID if args.grid == "full" else QUICK_GRID
    profiles: list[str | None] = list(PROFILES) if args.profile == "both" else [args.profile]
    if args.vectors is not None:
        profiles = [None]
    rows: list[Row] = []
    deciding = ""
    for profile in profiles:
        work = make_workload(args.n, args.queries, profile or "", args.seed, args.vectors)
        rows += run(work, grid)
        if profile != "matched":
            deciding = work.name  # the hard profile, or the real vectors
    deciding = deciding or rows[0].data
    chosen = choose([r for r in rows if r.data == deciding])
    if chosen is None:
        print(f"no configuration reached recall@10 >= {RECALL_TARGET} with p95 <= {P95_LIMIT_MS}")
        return 1
    print(f"chosen at n={args.n} on {deciding!r}: {describe(chosen)}", flush=True)
    if args.confirm_n:
        profile = profiles[-1] or ""
        work = make_workload(args.confirm_n, args.queries, profile, args.seed, args.vectors)
        confirm = run(work, finalists(rows, chosen))
        rows += confirm
        chosen = choose(confirm) or chosen
        print(f"chosen at n={args.confirm_n}: {describe(chosen)}", flush=True)
    print(
        f"defaults: dtype={chosen.dtype} connectivity={chosen.connectivity}"
        f" expansion_add={chosen.expansion_add}"
        f" expansion_search={with_margin(chosen.expansion_search)}",
        flush=True,
    )
    if args.json:
        write_json(
            args.json,
            {"machine": info, "rows": [asdict(r) for r in rows], "chosen": asdict(chosen)},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
