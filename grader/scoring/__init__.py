"""Points from stored outcomes: one chain of named steps (chain.py), task scores and the sanitizer penalty
first (score.py)."""
