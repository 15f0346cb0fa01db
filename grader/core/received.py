"""Where a submission's time received came from: the codes stored with it (`submissions.received_from`), and
their words.

The late policy reads only what a course system recorded, or what the grading machine itself saw; never a
time from inside a student's archive, which the student's own machine sets (a member's time can be set back
with `touch -d` or any archiver). grader/intake/layouts.py decides each entry's source:

  gradescope        Gradescope's created_at (its export's submission_metadata.yml, or the autograder's
                    submission_metadata.json)
  lms-times         the course system's own submission time, from the file given with `grade --lms-times`
                    (Canvas's submissions, as its API or a report lists them; grader/intake/lms_times.py)
  canvas-late       a Canvas download that Canvas marked LATE (its file name), with no time known: the late
                    policy's `marked_late` decides, and the submission is listed for a TA
  canvas-unmarked   a Canvas download not marked LATE, with no time known: on time
  service           the grading service's own clock when the upload arrived (grader/service/)
  file              the entry's own modification time on the grading machine (a plain folder of submissions,
                    or a single submission given by path): set when the file was copied there, not inside it
  (empty)           not recorded: a submission stored by a grader from before this was kept
"""
from __future__ import annotations

GRADESCOPE = "gradescope"
LMS_TIMES = "lms-times"
CANVAS_LATE = "canvas-late"
CANVAS_UNMARKED = "canvas-unmarked"
FILE = "file"
SERVICE = "service"
UNRECORDED = ""

WORDS = {GRADESCOPE: "Gradescope's submission time",
         LMS_TIMES: "the course system's submission time (--lms-times)",
         CANVAS_LATE: "unknown: Canvas marked it LATE and its download records no time",
         CANVAS_UNMARKED: "unknown: Canvas did not mark it late and its download records no time",
         FILE: "the entry's file time on the grading machine",
         SERVICE: "the grading service's clock at upload",
         UNRECORDED: "not recorded"}
# The sources whose time is not known: the late policy reads Canvas's mark instead.
TIME_UNKNOWN = frozenset({CANVAS_LATE, CANVAS_UNMARKED})


def words(source: str) -> str:
    """Where the time came from, in words for a person."""
    return WORDS.get(source, source)


def shown(received: str, source: str) -> str:
    """The time received as a page or a CSV shows it: the time and where it came from, or why it is unknown."""
    if source in TIME_UNKNOWN:
        return words(source)
    return f"{received} ({words(source)})" if source else received
