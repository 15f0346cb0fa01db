"""The grader: grades a directory of CUDA submissions against the reference solution.

Run it as `python3 -m grader <command>`; `python3 -m grader --help` lists the commands.
"""
