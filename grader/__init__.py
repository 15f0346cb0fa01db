"""The grader: grades a directory of CUDA submissions against the reference solution.

Run it as `bin/grader <command>`; `bin/grader --help` lists the commands.
"""
