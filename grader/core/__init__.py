"""The facts every layer shares: the task registry, the rubric and its policies, the status vocabulary,
the formulas, the grader's error."""
