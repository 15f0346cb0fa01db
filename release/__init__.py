"""Packaging for students: the starter tarball (make dist) and its leak check."""
