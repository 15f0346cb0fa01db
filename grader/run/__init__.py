"""Running student code: the sandbox, its seccomp confinement, the harness process and its protocol, the
sanitizer's runs, paired timing, the time budget, and the records a run produces."""
