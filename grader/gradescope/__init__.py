"""Gradescope's autograder: setup.sh and run_autograder (the zip make_zip.sh builds), and the bridge to the
course's grading service (bridge.py)."""
