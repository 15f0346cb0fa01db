"""Submissions as they arrive: a course system's download layouts, its times, the roster, one submission read
within the rubric's limits."""
