"""Gradebook exports: each a small reader of the grades store (results/grades.sqlite), one module per target.

  canvas.py      Canvas's gradebook import CSV: the class (or one student)
  gradescope.py  Gradescope's results.json: one student's latest submission
  autolab.py     Autolab's autoresult: one student's latest submission

Every exporter is called the same way, `export(store, rubric, student=None, **options) -> Export`, and
reads only the store: a class graded with `grade` and a single submission graded by `gradescope` or
`autolab` (which grade into a store first) export alike. The command line picks one by name from
EXPORTERS (`bin/grader export --to NAME`); nothing is chosen by configuration.
"""
from grader.exports import autolab, canvas, gradescope
from grader.exports.common import Export, ExportError  # noqa: F401

EXPORTERS = {"canvas": canvas, "gradescope": gradescope, "autolab": autolab}
