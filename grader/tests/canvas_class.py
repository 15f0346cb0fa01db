"""The sample class (data/sample-submissions/) as a Canvas bulk download, with a due date, for a grading week.

    python3 -m grader.tests.canvas_class OUT

writes OUT/download/ (one `login[_LATE]_USERID_SUBMISSIONID_submission.tar.gz` per student, Canvas's LATE
mark on those received after the due date; every file inside dated a week before it, as a student who set
their files' times back would: the grader must not read them), OUT/submission-times.csv (Canvas's own
submission times, as its Submissions API lists them: user_id, submitted_at, assignment_id), OUT/rubric.toml
(the course rubric with a [late] policy: due 2026-11-20 23:59:59 New York time, 10% per started day, capped
at 50%, one late day each), OUT/extensions.csv (one student's new due date) and OUT/roster.csv (a Canvas
gradebook export that also lists a student who submitted nothing). docs/gpu-runs/device_run.sh's
`canvas_class` step grades it on a GPU with `--from canvas --lms-times OUT/submission-times.csv`.
"""
from __future__ import annotations

import io
import sys
import tarfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample-submissions"
DUE = datetime(2026, 11, 21, 4, 59, 59, tzinfo=timezone.utc)  # 2026-11-20 23:59:59 in New York (EST)
LATE_POLICY = """
[late]
due = "2026-11-20T23:59:59"
timezone = "America/New_York"
penalty = 10
per = "day"
cap = 50
late_days = 1
extensions = "extensions.csv"
marked_late = "one period"
"""
TIMES = "submission-times.csv"
ASSIGNMENT_ID = 5123
BACKDATED = timedelta(days=-7)  # every file's time inside the archives, from the due date
# Each sample student: (login, Canvas user id, submission id, received relative to the due date).
STUDENTS = {
    "s01-stubs": ("s01stubs", 31001, 910001, timedelta(hours=-30)),
    "s02-naive-only": ("s02naive", 31002, 910002, timedelta(0)),  # on time to the second
    "s03-tiled-off-by-one": ("s03tiled", 31003, 910003, timedelta(seconds=1)),  # one second late: a late day
    "s04-race": ("s04race", 31004, 910004, timedelta(hours=30)),  # past the late day: 10%
    "s05-hang": ("s05hang", 31005, 910005, timedelta(days=9)),  # capped at 50%
    "s06-crash": ("s06crash", 31006, 910006, timedelta(hours=-2)),
    "s07-compile-error": ("s07compile", 31007, 910007, timedelta(hours=-1)),
    "s08-fast": ("s08fast", 31008, 910008, timedelta(days=2)),  # late, but inside an extension
}
EXTENSION = ("s08fast", "2026-11-23T23:59:59")
ABSENT = ("Absent, Ann", 31009, "s09absent")


def canvas_name(folder: str) -> str:
    login, user, sub, offset = STUDENTS[folder]
    late = "_LATE" if offset > timedelta(0) else ""  # Canvas marks anything after the class's due date
    return f"{login}{late}_{user}_{sub}_submission.tar.gz"


def build(out: Path) -> Path:
    out = Path(out)
    download = out / "download"
    download.mkdir(parents=True, exist_ok=True)
    times = ["user_id,submitted_at,assignment_id"]
    for folder, (login, user, sub, offset) in STUDENTS.items():
        when = (DUE + BACKDATED).timestamp()
        times.append(f"{user},{(DUE + offset).strftime('%Y-%m-%dT%H:%M:%SZ')},{ASSIGNMENT_ID}")
        with tarfile.open(download / canvas_name(folder), "w:gz") as tar:
            for path in sorted((SAMPLE / folder).rglob("*")):
                if path.is_file():
                    data = path.read_bytes()
                    info = tarfile.TarInfo(f"hw4/{path.relative_to(SAMPLE / folder).as_posix()}")
                    info.size, info.mtime, info.mode = len(data), when, 0o644
                    tar.addfile(info, io.BytesIO(data))
    (out / "rubric.toml").write_text((REPO / "grader" / "rubric.toml").read_text() + LATE_POLICY)
    (out / TIMES).write_text("\n".join(times) + "\n")
    (out / "extensions.csv").write_text("student,due\n" + ",".join(EXTENSION) + "\n")
    rows = [f'"{login.upper()}, Sample",{user},S{user},{login},CS 4120-001,'
            for login, user, _, _ in STUDENTS.values()]
    rows.append(f'"{ABSENT[0]}",{ABSENT[1]},S{ABSENT[1]},{ABSENT[2]},CS 4120-001,')
    (out / "roster.csv").write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,HW4 CUDA kernels ({ASSIGNMENT_ID})\n"
                                    "    Points Possible,,,,,100.00\n" + "\n".join(rows) + "\n")
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 -m grader.tests.canvas_class OUT")
    print(f"wrote {build(Path(sys.argv[1]))}: download/, {TIMES}, rubric.toml, extensions.csv, roster.csv")
