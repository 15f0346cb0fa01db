"""Where submissions are built and run: one declared interface (base.py) and its implementations, this
machine's GPUs (local.py) and the CPU backend (cpu.py)."""
