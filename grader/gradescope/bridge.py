"""Gradescope's autograder through the course's grading service: run_autograder runs this for every submission.

When the autograder zip carries the service's configuration (grader/gradescope/service.json, written by
`make gradescope ASSIGNMENT_TOKEN=path`: the rubric's [service] url and wait_seconds, and the assignment token's
file beside it), the submission's task files are packed as `make submit` packs them and uploaded for the student
Gradescope names, with Gradescope's own time received; the GPU's grade, once the service has it, is written as
results.json (the service's GET /api/v1/jobs/{id}/gradescope, as is).

Without that configuration, or when the service cannot be reached, refuses the submission, or does not finish
within wait_seconds, the submission is graded here as before (`bin/grader gradescope`: correctness only, on the
CPU of Gradescope's runner), and results.json's output begins with one line that says why.

    python3 -m grader.gradescope.bridge                 grade /autograder/submission (run_autograder)
    python3 -m grader.gradescope.bridge configure --token-file FILE --out service.json   (make_zip.sh)

AUTOGRADER_ROOT (default /autograder), GRADESCOPE_SERVICE (default: service.json beside this file) and
GRADER_FALLBACK (a shell command; default the `bin/grader gradescope` call) say otherwise, for the tests.
Standard library only, plus the students' own client (starter/tools/service.py) and packer (submit.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.core.registry import Registry, RegistryError
from grader.shared import student_tools
from grader.core.rubric import DEFAULT_RUBRIC, RubricError, load_rubric
from grader.intake.layouts import IntakeError, gradescope_single
from grader.intake.submission import NICKNAME_FILE, read_submission

REPO = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).resolve().parent / "service.json"
TOKEN_FILE = "assignment-token"  # beside service.json in the zip
WAIT_SECONDS = 900  # the rubric's [service] wait_seconds when it gives none
CPU_ONLY = ("this is a correctness-only grade on Gradescope's CPU; your GPU result will come from the course's "
            "service later.")
FAILED = "The autograder failed on its own (not your code); please tell the course staff."


service = student_tools.load("service")  # one client and one packer: the students'
submit = student_tools.load("submit")


class NotSent(Exception):
    """Why this submission was not graded by the service, as the rest of a sentence that begins "The course's
    GPU service" (note())."""


@dataclass(frozen=True)
class Settings:
    url: str
    token: str
    wait_seconds: float


def service_settings(rubric: Path = DEFAULT_RUBRIC) -> tuple[str, float]:
    """The rubric's [service] url ("" for none) and wait_seconds (grader/core/service_policy.py)."""
    service = load_rubric(Path(rubric), Registry.from_file()).service
    return service.url, float(service.wait_seconds)


def load_settings(path: Path) -> Settings | None:
    """The zip's configuration, or None when it carries none (the course runs no service for Gradescope)."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    token = (path.parent / data.get("token_file", TOKEN_FILE)).read_text(encoding="utf-8").strip()
    return Settings(str(data["url"]).rstrip("/"), token, float(data.get("wait_seconds", WAIT_SECONDS)))


def pack(root: Path, out: Path) -> tuple[str, str]:
    """Writes the submission's task files (and nickname) as `make submit` would; (student, received)."""
    try:
        entry = gradescope_single(root / "submission", root / "submission_metadata.json")
        files = [task.file for task in Registry.from_file().tasks]
    except (IntakeError, RegistryError) as e:
        raise NotSent(f"was not used (Gradescope's record of this submission could not be read: {e})") from None
    read = read_submission(entry, files)
    if read.rejected:
        raise NotSent(f"was not used (the submission cannot be sent: {read.rejected})")
    if not read.files:
        raise NotSent("was not used (the submission holds none of the task files)")
    members = dict(read.files)
    if read.nickname:
        members[NICKNAME_FILE] = (read.nickname + "\n").encode()
    submit.write_archive(out, members)
    return entry.student, entry.received


def through_service(settings: Settings, root: Path, poll: float = service.POLL_SECONDS) -> dict:
    """The GPU's results.json for this submission, from the service; NotSent says why there is none."""
    client = service.Client(service.Config(settings.url, "gradescope"), settings.token)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "submission.tar.gz"
        student, received = pack(root, archive)
        try:
            job = service.send_upload(client, archive, student=student, received_at=received)
            print(f"sent to {settings.url} for {student} (received {received}): {service.job_name(job)} (job id "
                  f"{job['job']})")
            job = service.follow(client, job, sys.stdout, settings.wait_seconds, poll)
            if job.get("state") in ("queued", "running"):
                raise NotSent(f"did not finish grading within {settings.wait_seconds / 60:g} minutes")
            if job.get("state") != "done":
                raise NotSent(f"could not grade it ({job.get('error') or job.get('state')})")
            return client.get(f"/jobs/{job['job']}/gradescope")
        except service.Unreachable as e:
            raise NotSent(f"could not be reached ({e.reason})") from None
        except service.ServiceError as e:
            raise NotSent(f"refused it ({getattr(e, 'said', e)})") from None


def note(why: NotSent) -> str:
    return f"The course's GPU service {why}: {CPU_ONLY}"


def fallback_command(root: Path) -> list[str]:
    given = os.environ.get("GRADER_FALLBACK", "").strip()
    if given:
        return ["sh", "-c", given]
    return ["bin/grader", "gradescope", "--submission", str(root / "submission"), "--results-dir",
            str(root / "results"), "--metadata", str(root / "submission_metadata.json"), "--work", "/tmp/grader-work"]


def write(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)


def on_cpu(root: Path, said: str | None) -> int:
    """Grades here as before; `said` (why not on the service) goes first in the output."""
    results = root / "results" / "results.json"
    results.unlink(missing_ok=True)
    status = subprocess.run(fallback_command(root), cwd=REPO).returncode
    try:
        graded = json.loads(results.read_text(encoding="utf-8"))
        if status != 0 or not isinstance(graded, dict):
            raise ValueError(f"the grader's exit status {status}")
    except (OSError, ValueError) as e:
        print(f"bridge: grading on the CPU failed: {e}", file=sys.stderr)
        write(results, {"score": 0, "output": "\n\n".join(filter(None, [said, FAILED]))})
        return 1
    if said:
        graded["output"] = said + ("\n\n" + graded["output"] if graded.get("output") else "")
        write(results, graded)
    return 0


def run(root: Path, config: Path) -> int:
    try:
        settings = load_settings(config)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"bridge: {config} is not a service configuration ({e}): grading on the CPU", file=sys.stderr)
        settings = None
    if settings is None:
        return on_cpu(root, None)
    try:
        results = through_service(settings, root)
    except NotSent as why:
        print(f"bridge: {note(why)}", file=sys.stderr)
        return on_cpu(root, note(why))
    write(root / "results" / "results.json", results)
    print(f"wrote {root / 'results' / 'results.json'} from the service: {results.get('score')}")
    return 0


def configure(token_file: Path, out: Path, rubric: Path) -> int:
    """make_zip.sh's step: the zip's service.json, and the token copied beside it; nothing without a url."""
    try:
        url, wait = service_settings(rubric)
    except (RubricError, RegistryError) as e:
        print(f"make gradescope: {e}", file=sys.stderr)
        return 1
    if not url:
        print(f"make gradescope: ASSIGNMENT_TOKEN was given but {rubric} names no [service] url: nothing to send "
              "submissions to", file=sys.stderr)
        return 1
    token = token_file.read_text(encoding="utf-8").strip() if token_file.is_file() else ""
    if not token:
        print(f"make gradescope: ASSIGNMENT_TOKEN={token_file}: no such file, or empty (bin/grader tokens makes an "
              "assignment token)", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    (out.parent / TOKEN_FILE).write_text(token + "\n", encoding="utf-8")
    out.write_text(json.dumps({"url": url, "token_file": TOKEN_FILE, "wait_seconds": wait}, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.gradescope.bridge", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    conf = commands.add_parser("configure", help="write the zip's service.json and token (make_zip.sh)")
    conf.add_argument("--token-file", type=Path, required=True)
    conf.add_argument("--out", type=Path, required=True)
    conf.add_argument("--rubric", type=Path, default=DEFAULT_RUBRIC)
    args = parser.parse_args(argv)
    if args.command == "configure":
        return configure(args.token_file, args.out, args.rubric)
    return run(Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")),
               Path(os.environ.get("GRADESCOPE_SERVICE", CONFIG)))


if __name__ == "__main__":
    sys.exit(main())
