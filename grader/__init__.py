"""The grader: grades a directory of CUDA submissions against the reference solution.

Run it as `bin/grader <command>`; `bin/grader --help` lists the commands.

Its packages are layers, listed here from the bottom up: a module imports only from its own layer and the
layers below it (grader/tests/test_layers.py holds every import to this order). cli/ (a module per command group) and __main__.py sit on top.
"""

LAYERS = (
    "shared",    # the students' own tools (starter/tools/) loaded as modules: the grader runs the code they run
    "core",      # the facts every layer shares: registry, rubric and its policies, statuses, formulas, errors
    "gate",      # the build gate: what a task file may contain and call (core's gate policy), judged from its objects
    "intake",    # submissions as they arrive: a course system's layouts and times, the roster, one submission read
    "outcomes",  # what grading produced, as data: a build's result, case outcomes, paired times, isolation, a result
    "run",       # running student code: sandbox, seccomp, the harness process, sanitizer, paired timing, budget
    "backends",  # where submissions are built and run: the interface (base.py), this machine's GPUs, the CPU
    "scoring",   # points from outcomes: one chain of named steps
    "store",     # the grades store: SQLite and its numbered migrations; saves and answers, no arithmetic
    "grading",   # one path per submission (intake plan, build, run, score, store), and rescoring
    "reports",   # readers of the store: feedback, grades.csv, overview, leaderboard, similarity
    "exports",   # readers of the store for course systems: Canvas, Gradescope, Autolab
    "slurm",     # grading a class as a Slurm array: submit, shard, merge, status
    "service",   # the course's grading service: HTTP API, tokens, limits, one worker per GPU (docs/service.md)
    "gradescope",  # Gradescope's autograder: its scripts, and the bridge that sends submissions to the service
)
