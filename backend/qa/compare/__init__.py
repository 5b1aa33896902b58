"""Comparing models: battles and their ratings (`qa board`), and one accuracy run against another (`qa compare`).

battles      Battle, votes files (JSONL) and battle records from the history
ratings      Bradley-Terry maximum likelihood on the Elo scale, bootstrap intervals (pure Python)
board        the leaderboard: ratings, win rates, who beat whom; as text or JSON
runs         two accuracy-run JSONs question by question (Wilson intervals, what changed)
runs_report  the run comparison as text or JSON
cli          the two commands' options and exit codes
"""
