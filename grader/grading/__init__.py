"""Grading as one path: the intake plan, then build, run, score and store for each submission (grade.py),
and rescoring what is stored."""
