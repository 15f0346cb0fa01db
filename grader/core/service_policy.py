"""The grading service's policy (rubric.toml's [service]): who may upload how often, and where the service is.

    [service]
    url = ""                  # the course's service (https://...): make dist ships it to students; "" runs none
    uploads_per_hour = 6      # uploads that count, per student, in any 60 minutes
    in_flight = 1             # a student's uploads queued or being graded at once (and profile requests, apart)
    profiles_per_hour = 3     # make profile GPU=1's Nsight Compute runs that count, per student, in any 60 minutes
    upload_seconds = 60       # an upload's body must arrive within this (a client sending a byte a second is cut)
    wait_seconds = 900        # the Gradescope bridge waits at most this for the service's result
    attempts = 3              # a job whose worker died this many times under it fails instead of going back

An upload that was rejected at intake or did not build does not count against `uploads_per_hour`: the student
learns from it and fixes it, and nothing of the GPU's time was spent. Staff and the assignment's own token (the
Gradescope bridge) are held to neither limit.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServicePolicy:
    url: str = ""
    uploads_per_hour: int = 6
    in_flight: int = 1
    profiles_per_hour: int = 3
    upload_seconds: float = 60
    wait_seconds: float = 900
    attempts: int = 3


NUMBERS = {"uploads_per_hour": True, "profiles_per_hour": True, "in_flight": True, "upload_seconds": False,
           "wait_seconds": False, "attempts": True}  # key -> must be an integer


def parse_service(section, fail) -> ServicePolicy:
    """[service] checked; absent, the defaults (no URL: the course runs no service)."""
    if section is None:
        return ServicePolicy()
    if not isinstance(section, dict):
        fail("[service]", "must be a table")
    known = {"url", *NUMBERS}
    for key in section.keys() - known:
        fail("[service]", f"unknown key '{key}' (expected {', '.join(sorted(known))})")
    url = section.get("url", "")
    if not isinstance(url, str) or (url and not url.startswith(("https://", "http://"))):
        fail("[service]", f"'url' must be \"\" or an http(s):// address, got {url!r}")
    values = {}
    for key, integer in NUMBERS.items():
        if key not in section:
            continue
        value = section[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            fail("[service]", f"'{key}' must be {'an integer' if integer else 'a number'}, got {value!r}")
        if value <= 0:
            fail("[service]", f"'{key}' must be positive, got {value}")
        values[key] = value
    return ServicePolicy(url.rstrip("/"), **values)
