"""Submissions as a course system delivers them: whose each entry is, and when it was received.

When received is what the course system recorded, or what the grading machine itself saw: never a time from
inside a student's archive, which the student's machine sets (grader/core/received.py names each source, which
is stored with the submission).

- plain (`--from plain`, the default): one entry per student, a folder, `.tar.gz`, `.tgz` or `.zip` named
  by the student id; received: the entry's own modification time on this machine (`file`), or the time
  `--lms-times FILE` gives the student.
- Canvas (`--from canvas`): the assignment's bulk download, each file named
  `login[_LATE]_USERID_SUBMISSIONID_original-name` (`smithj_LATE_12345_67890_submission.tar.gz`), with
  Canvas's numbered duplicates (`kernels-1.zip`). The student id is the login; Canvas's LATE flag, user id
  and submission id go into the notes. The download records no submission time: with `--lms-times FILE`
  (Canvas's submissions: grader/intake/lms_times.py) received is Canvas's own time; without it, or for a student
  the file lacks, it is unknown, and the late policy reads Canvas's LATE mark (`canvas-late`, listed for a
  TA, or `canvas-unmarked`, on time). The stored time of such an entry is the download file's own time on
  this machine, for ordering only. Files uploaded one by one (`smithj_12345_67890_add.cu`, `..._dot.cu`)
  are one entry, each file under the name the student gave it (Canvas's `add-1.cu` is `add.cu`).
- Gradescope's autograder (`bin/grader gradescope`): /autograder/submission_metadata.json names the
  submitter (`users[0]`: sid, else email) and the time (`created_at`) of the one submission being graded
  (gradescope_single).
- Gradescope (`--from gradescope`): the assignment's export folder, with `submission_metadata.yml` naming
  each `submission_NNN` folder's submitters (`:sid:`, else `:email:`) and its `:created_at:` time, which is
  the time received. Every submitter of a group submission gets it graded under their own id.

Several entries of one student: the one received last is graded (intake.choose_latest); at the same second,
the higher Canvas submission id, then the higher duplicate number (a student's Canvas entries without a
recorded time share one time, so Canvas's numbering decides); the feedback names the ones skipped.
"""
from __future__ import annotations

import re
from pathlib import Path

from grader.core import received as source_of
from grader.intake.submission import ARCHIVE_SUFFIXES, STUDENT_ID, Entry, file_time, list_entries, student_id
from grader.intake.lms_times import SubmissionTimes, TimesError, read_times, utc_time

SOURCES = ("plain", "canvas", "gradescope")
GRADESCOPE_METADATA = "submission_metadata.yml"
# login, Canvas's LATE flag, user id, submission id, the name the student uploaded (Canvas may number it: -1)
CANVAS_NAME = re.compile(r"(?P<login>.+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>.+)")
DUPLICATE = re.compile(r"-(\d+)$")


class IntakeError(ValueError):
    """The submissions folder cannot be read as the course system's delivery; the message says why."""


def find_entries(directory: Path, source: str = "plain", times: Path | None = None) -> tuple[list[Entry], list[str]]:
    """The submission entries of a delivery, each with its time received and where that came from, and a note
    for each entry skipped. `times`: the course system's submission times (--lms-times; canvas and plain)."""
    directory = Path(directory)
    if source not in SOURCES:
        raise IntakeError(f"--from must be one of {', '.join(SOURCES)}, not '{source}'")
    if source == "gradescope":
        if times is not None:
            raise IntakeError(f"--lms-times {times}: Gradescope's export records each submission's time "
                              "(created_at); --lms-times is for --from canvas or plain")
        return gradescope_entries(directory)
    try:
        recorded = read_times(times) if times is not None else None
    except TimesError as e:
        raise IntakeError(str(e)) from None
    if source == "canvas":
        entries, skipped = canvas_entries(directory)
    else:
        paths, skipped = list_entries(directory)
        entries = [Entry(p, student_id(p) or p.name, file_time(p), received_from=source_of.FILE) for p in paths]
    if recorded is not None:
        _given_times(entries, recorded)
    return entries, skipped


def _given_times(entries: list[Entry], recorded: SubmissionTimes):
    """The course system's time for each entry the times file names (by its id or its Canvas user id)."""
    for e in entries:
        when = recorded.time_of((e.student, *e.aliases))
        if when is None:
            continue
        e.received, e.received_from = when, source_of.LMS_TIMES
        e.notes = [n for n in e.notes if not n.startswith(_UNKNOWN_NOTE)]
        e.notes.append(f"received {when}: the submission time in {recorded.path.name}")


def _strip_archive(name: str) -> tuple[str, str] | None:
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return None


def canvas_entries(directory: Path) -> tuple[list[Entry], list[str]]:
    entries, skipped = [], []
    loose: dict[tuple[str, str, str, str], list[tuple[str, Path]]] = {}
    for path in sorted(directory.iterdir()):
        if path.name.startswith("."):
            continue
        m = CANVAS_NAME.fullmatch(path.name)
        if path.is_symlink():
            skipped.append(f"{path.name}: a symbolic link, not a submission; skipped")
            continue
        if m is None or not STUDENT_ID.fullmatch(m["login"]):
            skipped.append(f"{path.name}: not named as Canvas names a download (login[_LATE]_userid_submissionid_"
                           "file); skipped")
            continue
        stem = _strip_archive(m["file"]) if path.is_file() else (m["file"], "")
        if stem is None:  # one of the files the student uploaded one by one: gathered below
            loose.setdefault((m["login"], m["late"] or "", m["user"], m["sub"]), []).append((m["file"], path))
            continue
        dup = DUPLICATE.search(stem[0])
        notes = [_canvas_note(m["user"], m["sub"], m["late"], path.name)]
        entries.append(Entry(path, m["login"], file_time(path), notes,
                             (int(m["sub"]), int(dup.group(1)) if dup else 0), received_from=_marked(m["late"]),
                             aliases=(m["user"],)))
    for (login, late, user, sub), files in loose.items():
        named, notes = _uploaded_names(files)
        notes.insert(0, _canvas_note(user, sub, late, f"{len(files)} file{'s' if len(files) > 1 else ''} uploaded "
                                                     "one by one: " + ", ".join(p.name for _, p in files)))
        entries.append(Entry(files[0][1], login, max(file_time(p) for _, p in files), notes, (int(sub), 0),
                             received_from=_marked(late), aliases=(user,), loose=tuple(named)))
    newest: dict[str, str] = {}
    for e in entries:  # one time for all of a student's files: Canvas's own numbering orders them (rank)
        newest[e.student] = max(newest.get(e.student, e.received), e.received)
    for e in entries:
        e.received = newest[e.student]
        e.notes.append(f"{_UNKNOWN_NOTE} (" + ("Canvas marked it LATE" if e.received_from == source_of.CANVAS_LATE
                                               else "Canvas did not mark it late")
                       + "; its download records no submission time)")
    return entries, skipped


_UNKNOWN_NOTE = "received: time unknown"


def _marked(late: str | None) -> str:
    return source_of.CANVAS_LATE if late else source_of.CANVAS_UNMARKED


def _canvas_note(user: str, sub: str, late: str | None, what: str) -> str:
    return f"Canvas: user id {user}, submission {sub}" + (", marked LATE by Canvas" if late else "") + f" ({what})"


def _uploaded_names(files: list[tuple[str, Path]]) -> tuple[list[tuple[str, Path]], list[str]]:
    """The names the student gave files uploaded one by one: Canvas numbers a name it has seen before in the
    same submission (add-1.cu); of one name, the highest number is the file graded."""
    by_name: dict[str, list[tuple[int, str, Path]]] = {}
    for given, path in files:
        stem, dot, suffix = given.rpartition(".")
        if not dot:
            stem, suffix = given, ""
        dup = DUPLICATE.search(stem)
        name = stem[:dup.start()] + dot + suffix if dup else given
        by_name.setdefault(name, []).append((int(dup.group(1)) if dup else 0, given, path))
    named, notes = [], []
    for name, uploads in sorted(by_name.items()):
        uploads.sort()
        _, given, path = uploads[-1]
        named.append((name, path))
        notes += [f"{name} was uploaded more than once: graded {given}, ignored {other}" for _, other, _ in uploads[:-1]]
    return named, notes


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def _key(record: dict, name: str):
    """A Gradescope metadata key, written as a Ruby symbol (':sid') or plainly ('sid')."""
    return record.get(f":{name}", record.get(name))


def _time(value, where: str) -> str:
    """created_at as UTC ISO 8601 ('2026-11-20 23:59:59.123 -0800', or the datetime YAML made of it)."""
    try:
        return utc_time(value, where, "created_at")
    except ValueError as e:
        raise IntakeError(str(e)) from None


def gradescope_entries(directory: Path) -> tuple[list[Entry], list[str]]:
    import yaml  # PyYAML (grader/requirements.txt): only this reader needs it
    meta = directory / GRADESCOPE_METADATA
    if not meta.is_file():
        raise IntakeError(f"{directory}: no {GRADESCOPE_METADATA} in it; --from gradescope takes the folder of "
                          "a Gradescope export ('Export Submissions')")
    try:
        data = yaml.safe_load(meta.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise IntakeError(f"{meta}: not readable as YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict) or not data:
        raise IntakeError(f"{meta}: holds no submissions (expected submission_NNN: entries)")
    entries, skipped, listed = [], [], set()
    for name, record in data.items():
        where = f"{meta.name}: {name}"
        if not isinstance(record, dict):
            raise IntakeError(f"{where}: not a submission's record")
        listed.add(str(name))
        folder = directory / str(name)
        if not folder.is_dir() or folder.is_symlink():
            skipped.append(f"{name}: listed in {GRADESCOPE_METADATA} but no such folder; skipped")
            continue
        received = _time(_key(record, "created_at"), where)
        people = _key(record, "submitters") or []
        ids = []
        for person in people if isinstance(people, list) else []:
            person = person if isinstance(person, dict) else {}
            sid, email = _text(_key(person, "sid")), _text(_key(person, "email"))
            ids.append((sid or email, _text(_key(person, "name"))))
        if not ids or not all(i for i, _ in ids):
            skipped.append(f"{name}: its submitters have neither a student id (sid) nor an email; skipped")
            continue
        number = int(re.sub(r"\D", "", str(name)) or 0)
        for student, person in ids:
            if not STUDENT_ID.fullmatch(student):
                skipped.append(f"{name}: '{student}' cannot be a student id; skipped")
                continue
            notes = [f"Gradescope: {name}, created {received}" + (f", by {person}" if person else "")]
            if len(ids) > 1:
                notes.append("a group submission of " + ", ".join(i for i, _ in ids) + ": graded for each")
            entries.append(Entry(folder, student, received, notes, (number,), received_from=source_of.GRADESCOPE))
    for path in sorted(directory.iterdir()):
        if path.name != GRADESCOPE_METADATA and not path.name.startswith(".") and path.name not in listed:
            skipped.append(f"{path.name}: not listed in {GRADESCOPE_METADATA}; skipped")
    return entries, skipped


def gradescope_single(submission: Path, metadata: Path) -> Entry:
    """The one submission Gradescope's autograder is grading, as its submission_metadata.json describes it."""
    import json
    try:
        data = json.loads(Path(metadata).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IntakeError(f"{metadata}: not readable as Gradescope's submission metadata ({e})") from None
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, list) or not users or not isinstance(users[0], dict):
        raise IntakeError(f"{metadata}: names no submitter ('users')")
    first = users[0]
    student = _text(first.get("sid")) or _text(first.get("email"))
    if not STUDENT_ID.fullmatch(student):
        raise IntakeError(f"{metadata}: the submitter's sid or email '{student}' cannot be a student id")
    received = _time(data.get("created_at"), str(metadata))
    notes = [f"Gradescope: created {received}" + (f", by {_text(first.get('name'))}" if first.get("name") else "")]
    return Entry(Path(submission), student, received, notes, received_from=source_of.GRADESCOPE)
