"""The published leaderboard: `bin/grader leaderboard` reads results/grades.sqlite and writes
results/leaderboard/ (index.html, leaderboard.md, leaderboard.csv, history/).

  board.py       the rows: each student's best correct submission, ranked by the rubric's metric
  pseudonyms.py  the names shown: nicknames, or salted pseudonyms; the salt file
  history.py     every publish kept, and each row's change since the last one
  chart.py       the bar chart's geometry, drawn as inline SVG
  render.py      HTML (escaped, CSP-locked) and Markdown (escaped); CSV goes through grader/reports/spreadsheet.py
  publish.py     one publish, end to end
"""
from grader.reports.leaderboard.publish import PublishOptions, Published, open_store, publish  # noqa: F401
from grader.reports.leaderboard.pseudonyms import LeaderboardError  # noqa: F401
