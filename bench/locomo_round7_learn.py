"""The learner of the seventh recall round (`bench/locomo_round7.py`): logistic regression
written with numpy (Newton steps, L2 on the weights, standardised features), pointwise (is
this candidate evidence?) or pairwise (RankNet-style: is this evidence above that
non-evidence of the same question?), and the nested leave-one-conversation-out that chooses
the loss, the L2 strength and the depth inside the training conversations only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bench.locomo_round7_features import LinearModel

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Example:
    """One question's first candidates at one depth: features (fused order) and labels."""

    features: Array
    labels: npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Config:
    """How to learn: the loss, the L2 strength, the depth of the candidates re-ranked."""

    loss: str  # "pointwise", "balanced" (a question weighs 1 / its evidence) or "pairwise"
    l2: float
    depth: str  # "30", "50", "all"

    @property
    def label(self) -> str:
        return f"{self.loss} l2={self.l2:g} depth={self.depth}"


def _newton(x: Array, y: Array, weight: Array, l2: float, *, bias: bool, steps: int = 25) -> Array:
    """argmin Σ weight × logloss(y, x·w) + l2/2 |w|² (the bias, last column, unpenalised)."""
    if bias:
        x = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], l2)
    if bias:
        penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (weight * (p - y)) + penalty * w
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-7:
            break
    return w


def fit(examples: Sequence[Example], loss: str, l2: float, keep: Sequence[int]) -> LinearModel:
    """A model over the feature columns `keep` (the others weigh 0)."""
    columns = list(keep)
    stacked = np.vstack([e.features for e in examples])
    width = stacked.shape[1]
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale == 0] = 1.0
    standard = [((e.features - mean) / scale)[:, columns] for e in examples]
    if loss in ("pointwise", "balanced"):
        x = np.vstack(standard)
        y = np.concatenate([e.labels for e in examples]).astype(np.float64)
        weight = (  # "balanced": a question's rows weigh 1 / its evidence found, as recall
            np.concatenate([np.full(len(e.labels), 1.0 / max(1, e.labels.sum())) for e in examples])
            if loss == "balanced"
            else np.ones(len(y))
        )
        w = _newton(x, y, weight, l2, bias=True)[:-1]
    else:
        diffs: list[Array] = []
        weights: list[Array] = []
        for e, s in zip(examples, standard, strict=True):
            pos, neg = s[e.labels], s[~e.labels]
            if not len(pos) or not len(neg):
                continue
            d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, len(columns))
            diffs.append(d)
            weights.append(np.full(len(d), 1.0 / len(d)))  # every question counts once
        x = np.vstack(diffs)
        w = _newton(x, np.ones(len(x)), np.concatenate(weights), l2, bias=False)
    full = np.zeros(width)
    full[columns] = w
    return LinearModel(tuple(mean.tolist()), tuple(scale.tolist()), tuple(full.tolist()))


Scorer = Callable[[str, Config | None, LinearModel | None], Sequence[float]]
"""(conversation, config or None for the product, model) → one criterion value a question."""
Train = Callable[[Sequence[str], Config], LinearModel]


def choose(
    training: Sequence[str], configs: Sequence[Config], train: Train, score: Scorer
) -> Config | None:
    """The config with the best mean criterion over leave-one-out inside `training` (each
    of its conversations scored by a model trained on the others); None: the product is
    at least as good (ties go to the product)."""

    def inner(config: Config | None) -> float:
        values: list[float] = []
        for held in training:
            model = None if config is None else train([c for c in training if c != held], config)
            values += score(held, config, model)
        return float(np.mean(values))

    best: Config | None = None
    best_value = inner(None)
    for config in configs:
        value = inner(config)
        if value > best_value + 1e-12:
            best, best_value = config, value
    return best


def nested(
    order: Sequence[str], configs: Sequence[Config], train: Train, score: Scorer
) -> Mapping[str, tuple[Config | None, LinearModel | None]]:
    """For each conversation: the config chosen on the other four and the model trained on
    them with it (None, None: the product)."""
    chosen: dict[str, tuple[Config | None, LinearModel | None]] = {}
    for held in order:
        training = [c for c in order if c != held]
        config = choose(training, configs, train, score)
        chosen[held] = (config, None if config is None else train(training, config))
    return chosen
