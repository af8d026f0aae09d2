"""The non-linear learner of the twelfth recall round (`bench/locomo_round12.py`): shallow
gradient-boosted trees written with numpy — logistic loss with per-row weights (the balanced
loss: a question's rows weigh 1 / its evidence), Newton leaf values with an L2 on them,
level-wise complete trees of depth 1–3 over each feature's quantile edges, shrinkage.

A model is a handful of arrays (`Trees`): per tree and internal node a feature and a
threshold (left when below it), per leaf a value — small enough to write down as constants
and cheap to apply to ~90 candidates (one gather per level over every tree at once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]
BINS = 32


@dataclass(frozen=True, slots=True)
class Trees:
    """`rounds` complete trees of `depth`: `feature` / `threshold` (rounds × 2^depth − 1
    internal nodes, breadth-first; a row goes right when its value ≥ the threshold) and
    `leaf` (rounds × 2^depth values, shrinkage applied). Score = Σ of the leaves reached;
    `init` shifts it (no effect on an order); a model boosted from a starting margin adds
    the trees to that margin (`fit_trees`' `init`), which the caller adds back."""

    feature: npt.NDArray[np.intp]
    threshold: Array
    leaf: Array
    init: float = 0.0

    @property
    def depth(self) -> int:
        return int(np.log2(self.leaf.shape[1]))

    def scores(self, x: Array) -> Array:
        rounds, rows = self.feature.shape[0], x.shape[0]
        node = np.zeros((rounds, rows), np.intp)
        tree = np.arange(rounds)[:, None]
        row = np.arange(rows)[None, :]
        for _ in range(self.depth):
            f = self.feature[tree, node]
            right = x[row, f] >= self.threshold[tree, node]
            node = 2 * node + 1 + right
        leaves = node - (self.leaf.shape[1] - 1)
        return self.init + self.leaf[tree, leaves].sum(axis=0)


def _edges(x: Array) -> list[Array]:
    """Per feature, up to `BINS` − 1 distinct quantile edges of the training rows."""
    qs = np.linspace(0, 1, BINS + 1)[1:-1]
    out = []
    for column in x.T:
        edges = np.unique(np.quantile(column, qs))
        out.append(edges[edges > column.min()])  # a split must leave rows on both sides
    return out


def fit_trees(
    x: Array,
    y: Array,
    weight: Array,
    *,
    depth: int,
    rounds: int,
    shrinkage: float,
    l2: float = 1.0,
    min_hessian: float = 1.0,
    init: Array | None = None,
) -> Trees:
    """Boost `rounds` trees of `depth` on logistic loss (`weight` per row, rescaled to mean
    1). `init`: a starting margin per row (e.g. a linear model's score): the trees then
    fit what it leaves. `l2` on the leaf values, `min_hessian` per child."""
    n, d = x.shape
    w = weight * (n / weight.sum())
    edges = _edges(x)
    binned = np.zeros((n, d), np.intp)
    for j, e in enumerate(edges):
        binned[:, j] = np.searchsorted(e, x[:, j], side="right")  # edges ≤ value
    flat = np.arange(d) * BINS  # a feature's offset in a node's histogram
    base = 0.0
    if init is None:
        rate = float(np.clip((w * y).sum() / w.sum(), 1e-6, 1 - 1e-6))
        base = float(np.log(rate / (1 - rate)))
        margin = np.full(n, base)
    else:  # the starting margin and the one offset that fits the labels' rate best
        margin = init.astype(np.float64).copy()
        for _ in range(20):
            p = 1.0 / (1.0 + np.exp(-np.clip(margin + base, -30, 30)))
            base -= float((w * (p - y)).sum() / max((w * p * (1 - p)).sum(), 1e-12))
        margin += base
    internal, leaves = 2**depth - 1, 2**depth
    feature = np.zeros((rounds, internal), np.intp)
    threshold = np.full((rounds, internal), np.inf)
    leaf = np.zeros((rounds, leaves))
    for r in range(rounds):
        p = 1.0 / (1.0 + np.exp(-np.clip(margin, -30, 30)))
        g, h = w * (p - y), w * p * (1 - p)
        node = np.zeros(n, np.intp)  # the node of each row at this level, 0-based per level
        for level in range(depth):
            width = 2**level
            index = (node[:, None] * (d * BINS) + flat[None, :] + binned).ravel()
            size = width * d * BINS
            gh = np.bincount(index, np.repeat(g, d), size).reshape(width, d, BINS)
            hh = np.bincount(index, np.repeat(h, d), size).reshape(width, d, BINS)
            g_left, h_left = np.cumsum(gh, axis=2), np.cumsum(hh, axis=2)
            g_all, h_all = g_left[:, :, -1:], h_left[:, :, -1:]
            g_right, h_right = g_all - g_left, h_all - h_left
            gain = g_left**2 / (h_left + l2) + g_right**2 / (h_right + l2) - g_all**2 / (h_all + l2)
            gain[(h_left < min_hessian) | (h_right < min_hessian)] = 0.0
            for j, e in enumerate(edges):  # only the bins that have an edge to split at
                gain[:, j, len(e) :] = 0.0
            right = np.zeros(n, bool)
            for k in range(width):
                at = width - 1 + k
                best = int(np.argmax(gain[k]))
                j, b = divmod(best, BINS)
                if gain[k, j, b] <= 1e-12:
                    continue  # no split: every row goes left (threshold +inf)
                feature[r, at], threshold[r, at] = j, edges[j][b]
                mine = node == k
                right[mine] = x[mine, j] >= edges[j][b]
            node = 2 * node + right
        g_leaf = np.bincount(node, g, leaves)
        h_leaf = np.bincount(node, h, leaves)
        leaf[r] = -shrinkage * g_leaf / (h_leaf + l2)
        margin += leaf[r][node]
    return Trees(feature, threshold, leaf, base)
