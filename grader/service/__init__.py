"""The grading service (`bin/grader serve`): uploads over HTTP, graded by the same path as a class (docs/service.md)."""
