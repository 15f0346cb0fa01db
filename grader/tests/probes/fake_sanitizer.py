#!/usr/bin/python3
"""A stand-in for compute-sanitizer (no GPU): takes its options, runs the target with a channel of its own
passed down (as the real tool's instrumentation is), and writes its summary to --log-file only once every
process holding that channel is gone: the real tool waits for every process of its target the same way
(measured on an H100: a detached grandchild sleeping 30 s kept it 30.6 s)."""
import os
import subprocess
import sys

args = sys.argv[1:]
options = {}
while args and args[0].startswith("--"):
    options[args[0]] = args[1]
    args = args[2:]
read, write = os.pipe()
target = subprocess.Popen(args, pass_fds=(write,))
os.close(write)
status = target.wait()
while os.read(read, 4096):  # EOF only when no process holds the channel any more
    pass
with open(options["--log-file"], "w") as log:
    log.write(f"{options['--prefix']} ERROR SUMMARY: 0 errors\n")
sys.exit(status)
