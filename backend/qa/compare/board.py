"""The leaderboard: ratings with intervals, battles and win rates, and who beat whom how often.

Built from battles already selected (`battles.select`); printed as a table or as one JSON object.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend.qa.compare.battles import Battle
from backend.qa.compare.ratings import Rating, rate


@dataclass(frozen=True)
class Standing:
    player: str
    rating: Rating
    battles: int
    points: float  # wins, plus half of each tie

    @property
    def win_rate(self) -> float:
        return self.points / self.battles


@dataclass(frozen=True)
class Board:
    battles: int
    standings: list[Standing]  # best first
    points: dict[tuple[str, str], float]  # (row, column) -> points the row scored against the column
    counts: dict[tuple[str, str], int]  # (row, column) -> battles between them (both orders)
    notes: list[str]  # what a reader should know about the ratings (unbeaten players, groups that never met)


def build_board(battles: list[Battle], *, rounds: int = 1000, seed: int | None = None) -> Board:
    """Ratings (see ratings.rate) and the tallies around them; CompareInputError if there are no battles."""
    ratings = rate(battles, rounds=rounds, seed=seed)
    points: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for b in battles:
        for row, col, scored in ((b.a, b.b, b.points_a), (b.b, b.a, 1.0 - b.points_a)):
            points[row, col] = points.get((row, col), 0.0) + scored
            counts[row, col] = counts.get((row, col), 0) + 1
    standings = [
        Standing(
            name,
            rating,
            sum(n for (r, _), n in counts.items() if r == name),
            sum(p for (r, _), p in points.items() if r == name),
        )
        for name, rating in ratings.items()
    ]
    return Board(len(battles), standings, points, counts, _notes(standings, counts))


def _notes(standings: list[Standing], counts: dict[tuple[str, str], int]) -> list[str]:
    notes = []
    for s in standings:
        if s.points in (0.0, float(s.battles)):
            how = "never lost" if s.points else "never won"
            notes.append(
                f"{s.player} {how} (not even a tie): its rating is kept finite only by a slight "
                f"regularization; read it as {'above' if s.points else 'below'} the rest, not as a distance "
                "(it also moves the mean that puts everyone around 1000)"
            )
    groups = _groups([s.player for s in standings], counts)
    if len(groups) > 1:
        listed = "; ".join(", ".join(g) for g in groups)
        notes.append(f"these groups never met, not even through others: {listed}. Ratings compare only within a group")
    return notes


def _groups(players: list[str], counts: dict[tuple[str, str], int]) -> list[list[str]]:
    """Players connected by battles (directly or through others), each group in the board's order."""
    group = {p: p for p in players}

    def root(p: str) -> str:
        while group[p] != p:
            p = group[p]
        return p

    for a, b in counts:
        group[root(a)] = root(b)
    found: dict[str, list[str]] = {}
    for p in players:
        found.setdefault(root(p), []).append(p)
    return list(found.values())


def board_json(board: Board) -> dict:
    """The machine-readable board: {"battles": N, "ratings": {name: {"rating", "low", "high"}}}, best first."""
    return {
        "battles": board.battles,
        "ratings": {
            s.player: {"rating": s.rating.rating, "low": s.rating.low, "high": s.rating.high} for s in board.standings
        },
    }


def board_text(board: Board, *, heading: str) -> str:
    """The ratings table, then the win-rate and battle-count matrices, rows and columns in rating order."""
    names = [s.player for s in board.standings]
    width = max(len("player"), *(len(n) for n in names))
    head = f"rank  {'player':<{width}}  rating   95% interval  battles  win rate"
    lines = [heading, "", head, "-" * len(head)]
    for rank, s in enumerate(board.standings, start=1):
        r = s.rating
        lines.append(
            f"{rank:>4}  {s.player:<{width}}  {r.rating:>6.0f}  {r.low:>6.0f} - {r.high:<6.0f}"
            f"{s.battles:>8}  {100 * s.win_rate:>7.0f}%"
        )
    lines += ["", "win rate of the row against the column (a tie counts half; '-': they never met):"]
    lines += _matrix(names, width, lambda row, col: _share(board, row, col))
    lines += ["", "battles between them:"]
    lines += _matrix(names, width, lambda row, col: str(board.counts.get((row, col), 0)))
    if board.notes:
        lines += [""] + [f"note: {note}" for note in board.notes]
    return "\n".join(lines)


def _share(board: Board, row: str, col: str) -> str:
    n = board.counts.get((row, col), 0)
    return f"{100 * board.points[row, col] / n:.0f}%" if n else "-"


def _matrix(names: list[str], width: int, cell) -> list[str]:
    values = [[cell(r, c) if r != c else "" for c in names] for r in names]
    size = max(5, *(len(v) + 1 for row in values for v in row))
    lines = [" " * (width + 6) + "".join(f"{n:>{size}}" for n in range(1, len(names) + 1))]
    for rank, (name, row) in enumerate(zip(names, values, strict=True), start=1):
        lines.append((f"{rank:>4}  {name:<{width}}" + "".join(f"{v:>{size}}" for v in row)).rstrip())
    return lines
