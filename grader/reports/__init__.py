"""Readers of the store: feedback pages, grades.csv, the staff's overview, the leaderboard, similarity."""
