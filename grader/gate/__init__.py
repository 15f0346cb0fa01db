"""The build gate: each task file is compiled to an object and judged before anything is linked.

    policy.py      the rules, from rubric.toml's [gate] section and [tasks.<id>.gate] loosening
    elf.py         reading ELF objects, and the device code inside nvcc's fat binary
    objects.py     the facts of one object: symbols used and defined, startup code, instructions
    check.py       the facts judged against one task's rules: Findings a student can read
    build_gate.py  the gate over a submission: source pre-check, objects, stubs for what breaks a rule
    report.py      the verdict stored with the submission

The source pre-check itself is starter/tools/precheck.py (it ships to students).
"""
