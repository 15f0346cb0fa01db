"""What grading produced, before and after it is stored: the build's result, each case's outcome and its paired
timing, the tools' and the profiler's outcomes, a submission's result. Data only: scoring, the store and the
reports read these without importing the layer that runs student code (run/)."""
