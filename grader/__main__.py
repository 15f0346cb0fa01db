import sys

try:
    from grader.cli import main
except ModuleNotFoundError as e:  # a package of grader/requirements.txt, not one of the project's own modules
    if (e.name or "").split(".")[0] in ("grader", "handout", "release"):
        raise
    sys.exit(f"grader: Python {sys.executable} has no module {e.name!r}, which the grader needs: run `make deps` "
             "(it installs grader/requirements.txt into .venv/, which bin/grader runs with), then bin/grader again")

sys.exit(main())
