"""Bradley-Terry ratings on the Elo scale, fitted by maximum likelihood, with 95% bootstrap intervals.

The model: P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400)), so 400 points are a factor of 10 in
the odds; a tie counts half a win for each side. It is the model LMArena fits (FastChat's
`compute_mle_elo`, a logistic regression on the Elo scale); FastChat then anchors one model at a
fixed rating, we shift the ratings so that their mean is 1000.

Pure Python, no numpy or scipy: the runtime environment (locks/ui.txt) has neither, the page is to
call this too, and the work is small: the battles reduce to one score per pair of players, so a fit
is a few Newton steps on a players x players system however many battles there are (slow only past
some 30 players). The intervals resample the battles with replacement, refit (warm-started) and take
the 2.5 and 97.5 percentiles of each rating.

Regularization: a player who only wins (or only loses) has no finite maximum-likelihood rating, so
the fit maximizes the log-likelihood minus RIDGE/2 * sum(theta^2) (theta: ratings in natural-log
odds units), a Gaussian prior so wide (sd ~5,500 points) that it moves ordinary ratings by a fraction
of a point, yet keeps an unbeaten player's rating finite (e.g. 3-0 gives a gap of ~1,180 points: read
it as "higher than the rest", and `notes` says so). It also makes the mean of theta exactly 0.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

from backend.errors import CompareInputError
from backend.qa.compare.battles import Battle

ELO_PER_NAT = 400 / math.log(10)  # Elo points per unit of natural-log odds
MEAN_RATING = 1000.0
RIDGE = 1e-3
TOLERANCE = 1e-9  # stop when no rating moves more than this (natural-log units)
MAX_STEPS = 100

Pair = tuple[int, int, float, float]  # players i < j, battles between them, points i scored


def pair_scores(cells: list[tuple[int, int, float]], counts: list[float] | None = None) -> list[Pair]:
    """Per pair of players (i < j): battles and i's points, from cells (i, j, points of i) and their counts."""
    scores: dict[tuple[int, int], list[float]] = {}
    for (i, j, points), count in zip(cells, counts or [1.0] * len(cells), strict=True):
        if i > j:
            i, j, points = j, i, 1.0 - points
        cell = scores.setdefault((i, j), [0.0, 0.0])
        cell[0] += count
        cell[1] += count * points
    return [(i, j, n, s) for (i, j), (n, s) in scores.items() if n]


def _softplus(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def log_likelihood(theta: list[float], pairs: list[Pair]) -> float:
    """The penalized log-likelihood the fit maximizes (ties as half a win and half a loss)."""
    total = -RIDGE / 2 * sum(t * t for t in theta)
    for i, j, n, s in pairs:
        d = theta[i] - theta[j]
        total -= s * _softplus(-d) + (n - s) * _softplus(d)
    return total


def _newton_system(theta: list[float], pairs: list[Pair]) -> tuple[list[float], list[list[float]]]:
    """The gradient of the log-likelihood and its information matrix (minus the Hessian)."""
    k = len(theta)
    grad = [-RIDGE * t for t in theta]
    info = [[RIDGE if r == c else 0.0 for c in range(k)] for r in range(k)]
    for i, j, n, s in pairs:
        p = _sigmoid(theta[i] - theta[j])
        g, w = s - n * p, n * p * (1.0 - p)
        grad[i] += g
        grad[j] -= g
        info[i][i] += w
        info[j][j] += w
        info[i][j] -= w
        info[j][i] -= w
    return grad, info


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix @ x = vector (Gaussian elimination; the matrix is symmetric positive definite)."""
    k = len(vector)
    rows = [row[:] + [v] for row, v in zip(matrix, vector, strict=True)]
    for col in range(k):
        pivot = rows[col][col]
        for r in range(col + 1, k):
            factor = rows[r][col] / pivot
            if factor:
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    x = [0.0] * k
    for r in range(k - 1, -1, -1):
        x[r] = (rows[r][k] - sum(rows[r][c] * x[c] for c in range(r + 1, k))) / rows[r][r]
    return x


def fit(players: int, pairs: list[Pair], start: list[float] | None = None) -> list[float]:
    """Maximum-likelihood theta (natural-log odds units, mean 0): Newton's method, step halved if it overshoots."""
    theta = list(start) if start else [0.0] * players
    current = log_likelihood(theta, pairs)
    for _ in range(MAX_STEPS):
        grad, info = _newton_system(theta, pairs)
        step, scale = _solve(info, grad), 1.0
        while True:
            trial = [t + scale * d for t, d in zip(theta, step, strict=True)]
            value = log_likelihood(trial, pairs)
            if value >= current - 1e-12 or scale < 1e-8:
                break
            scale /= 2
        theta, current = trial, value
        if max((abs(scale * d) for d in step), default=0.0) < TOLERANCE:
            break
    return theta


def to_elo(theta: list[float]) -> list[float]:
    mean = sum(theta) / len(theta)
    return [MEAN_RATING + ELO_PER_NAT * (t - mean) for t in theta]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    pos = q / 100 * (len(ordered) - 1)
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def bootstrap(
    players: int, cells: list[tuple[int, int, float]], *, rounds: int, rng: random.Random, start: list[float]
) -> list[list[float | None]]:
    """Elo ratings refitted on `rounds` resamples of the battles (`cells`: one (i, j, points of i) each).

    A player no resampled battle involves has no rating in that round (None): the ridge alone would
    put it at theta 0, a value the data never said. The players present are anchored as in the full
    fit: their mean is their mean there (1000 when all are present), so one player's absence does not
    shift the others.
    """
    distinct = sorted(set(cells))
    index = {cell: n for n, cell in enumerate(distinct)}
    drawn_from = [index[cell] for cell in cells]
    full = to_elo(start)
    replicates = []
    for _ in range(rounds):
        counts = Counter(rng.choices(drawn_from, k=len(cells)))
        pairs = pair_scores(distinct, [float(counts[n]) for n in range(len(distinct))])
        present = sorted({i for i, _, _, _ in pairs} | {j for _, j, _, _ in pairs})
        theta = fit(players, pairs, start)
        mean = sum(theta[n] for n in present) / len(present)
        anchor = sum(full[n] for n in present) / len(present)
        ratings = {n: anchor + ELO_PER_NAT * (theta[n] - mean) for n in present}
        replicates.append([ratings.get(n) for n in range(players)])
    return replicates


def _interval(samples: list[float | None], rating: float) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of a player's bootstrap ratings (the rating itself if it has none)."""
    values = [v for v in samples if v is not None]
    return (percentile(values, 2.5), percentile(values, 97.5)) if values else (rating, rating)


@dataclass(frozen=True)
class Rating:
    rating: float
    low: float
    high: float


def rate(battles: list[Battle], *, rounds: int = 1000, seed: int | None = None) -> dict[str, Rating]:
    """Each player's Elo-scale rating (mean 1000) with its 95% bootstrap interval, best first."""
    if not battles:
        raise CompareInputError("no battles to rate")
    players = sorted({b.a for b in battles} | {b.b for b in battles})
    index = {name: n for n, name in enumerate(players)}
    cells = [(index[b.a], index[b.b], b.points_a) for b in battles]
    theta = fit(len(players), pair_scores(cells))
    ratings = to_elo(theta)
    samples = bootstrap(len(players), cells, rounds=rounds, rng=random.Random(seed), start=theta)
    columns: list[tuple[float | None, ...]] = list(zip(*samples, strict=True)) if samples else [() for _ in players]
    bounds = [_interval(list(column), rating) for column, rating in zip(columns, ratings, strict=True)]
    order = sorted(range(len(players)), key=lambda n: (-ratings[n], players[n]))
    return {players[n]: Rating(ratings[n], *bounds[n]) for n in order}
