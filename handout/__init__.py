"""The assignment's handout, rendered from the rubric, the task registry and one measured benchmark run."""
