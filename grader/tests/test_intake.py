"""Intake: task files found anywhere, extras listed, every unsafe or broken submission rejected alone."""
from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest

from grader.intake.submission import MAX_FILES, list_entries, parse_nickname, read_submission

TASKS = ["fill.cu", "add.cu", "dot.cu"]


def make_tar(path, members: dict[str, bytes], kind=tarfile.REGTYPE, link_name=""):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            info.type = kind if name.endswith(".special") else tarfile.REGTYPE
            info.linkname = link_name
            tar.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
    return path


def make_zip(path, members: dict[str, bytes], symlink: str | None = None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, "/etc/passwd")
    return path


def test_a_folder_is_read_with_task_files_found_anywhere(tmp_path):
    folder = tmp_path / "alice"
    (folder / "src" / "deep").mkdir(parents=True)
    (folder / "src" / "deep" / "fill.cu").write_text("// fill")
    (folder / "add.cu").write_text("// add")
    (folder / "notes.txt").write_text("hi")
    sub = read_submission(folder, TASKS)
    assert sub.rejected is None
    assert set(sub.files) == {"fill.cu", "add.cu"}
    assert sub.ignored == ["notes.txt"]
    assert "dot.cu is missing: that task scores 0" in sub.notes
    assert len(sub.sha256) == 64


def test_the_same_folder_has_the_same_digest_and_a_change_changes_it(tmp_path):
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "fill.cu").write_text("// v1")
    first = read_submission(folder, TASKS).sha256
    assert read_submission(folder, TASKS).sha256 == first
    (folder / "fill.cu").write_text("// v2")
    assert read_submission(folder, TASKS).sha256 != first


def test_tar_gz_tgz_and_zip_are_read(tmp_path):
    members = {"hw/fill.cu": b"// fill", "hw/dot.cu": b"// dot", "hw/nickname.txt": b"  Speedy <b>  \nsecond"}
    for name in ("carol.tar.gz", "dave.tgz"):
        sub = read_submission(make_tar(tmp_path / name, members), TASKS)
        assert sub.rejected is None and set(sub.files) == {"fill.cu", "dot.cu"}
        assert sub.nickname == "Speedy <b>"
    sub = read_submission(make_zip(tmp_path / "erin.zip", members), TASKS)
    assert sub.student == "erin" and sub.rejected is None and sub.files["dot.cu"] == b"// dot"


def test_a_task_file_found_twice_uses_the_shallowest_and_says_so(tmp_path):
    sub = read_submission(make_tar(tmp_path / "f.tar.gz", {"a/b/fill.cu": b"deep", "fill.cu": b"top"}), TASKS)
    assert sub.files["fill.cu"] == b"top"
    assert any("appears more than once" in n for n in sub.notes)


@pytest.mark.parametrize("members, reason", [
    ({"../evil/fill.cu": b"x"}, "climbs out of it"),
    ({"a/../../fill.cu": b"x"}, "climbs out of it"),
    ({"/etc/fill.cu": b"x"}, "absolute path"),
])
def test_unsafe_paths_in_a_tar_are_rejected(tmp_path, members, reason):
    sub = read_submission(make_tar(tmp_path / "mallory.tar.gz", members), TASKS)
    assert reason in sub.rejected and not sub.files


def test_unsafe_paths_in_a_zip_are_rejected(tmp_path):
    sub = read_submission(make_zip(tmp_path / "mallory.zip", {"../../fill.cu": b"x"}), TASKS)
    assert "climbs out of it" in sub.rejected


def test_links_are_rejected_in_tar_zip_and_folder(tmp_path):
    tar = make_tar(tmp_path / "t.tar.gz", {"link.special": b""}, kind=tarfile.SYMTYPE, link_name="/etc/passwd")
    assert "holds a link" in read_submission(tar, TASKS).rejected
    hard = make_tar(tmp_path / "h.tar.gz", {"link.special": b""}, kind=tarfile.LNKTYPE, link_name="fill.cu")
    assert "holds a link" in read_submission(hard, TASKS).rejected
    assert "holds a link" in read_submission(make_zip(tmp_path / "z.zip", {}, symlink="fill.cu"), TASKS).rejected
    folder = tmp_path / "f"
    folder.mkdir()
    os.symlink("/etc/passwd", folder / "fill.cu")
    assert "symbolic link" in read_submission(folder, TASKS).rejected


def test_device_files_and_pipes_are_rejected(tmp_path):
    tar = make_tar(tmp_path / "d.tar.gz", {"dev.special": b""}, kind=tarfile.CHRTYPE)
    assert "device file" in read_submission(tar, TASKS).rejected
    folder = tmp_path / "p"
    folder.mkdir()
    os.mkfifo(folder / "pipe")
    assert "device file or pipe" in read_submission(folder, TASKS).rejected


def test_more_than_ten_megabytes_unpacked_is_rejected(tmp_path):
    big = {"fill.cu": b"0" * (11 * 1024 * 1024)}
    assert "more than 10 MB unpacked" in read_submission(make_tar(tmp_path / "big.tar.gz", big), TASKS).rejected
    assert "more than 10 MB unpacked" in read_submission(make_zip(tmp_path / "bomb.zip", big), TASKS).rejected


def test_more_than_a_thousand_files_is_rejected(tmp_path):
    many = {f"f{i}.txt": b"x" for i in range(MAX_FILES + 1)}
    assert f"more than {MAX_FILES} files" in read_submission(make_tar(tmp_path / "many.tar.gz", many), TASKS).rejected


def test_an_archive_that_cannot_be_decoded_is_rejected(tmp_path):
    (tmp_path / "junk.tar.gz").write_bytes(b"this is not gzip")
    assert "cannot be read as .tar.gz" in read_submission(tmp_path / "junk.tar.gz", TASKS).rejected
    good = make_zip(tmp_path / "cut.zip", {"fill.cu": b"x" * 5000})
    good.write_bytes(good.read_bytes()[:60])
    assert "cannot be read as .zip" in read_submission(good, TASKS).rejected


def test_a_task_file_that_is_not_text_is_rejected(tmp_path):
    sub = read_submission(make_tar(tmp_path / "bin.tar.gz", {"fill.cu": b"\xff\xfe\x00binary"}), TASKS)
    assert "not a UTF-8 text file" in sub.rejected


def test_entries_that_are_not_submissions_are_skipped_with_a_note(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "bob.tar.gz").write_bytes(b"")
    (tmp_path / "readme.txt").write_text("x")
    (tmp_path / "bad name!").mkdir()
    os.symlink(tmp_path / "alice", tmp_path / "carol")
    entries, skipped = list_entries(tmp_path)
    assert [e.name for e in entries] == ["alice", "bob.tar.gz"]
    assert len(skipped) == 3 and any("symbolic link" in s for s in skipped)


def test_a_nickname_is_one_trimmed_printable_line_of_at_most_32_characters():
    assert parse_nickname(b"  Warp Speed \t\nignored") == "Warp Speed"
    assert parse_nickname(b"x" * 50) == "x" * 32
    assert parse_nickname(b"bell\x07 ring") == "bell ring"
    assert parse_nickname(b"   \n") is None


# ---------------------------------------------------------------------------
# Bounds: what one archive can make the grader do (rubric [limits]: archive_mib, unpacked_mib, members,
# intake_seconds).

def gz_of_repeated(path, unit: bytes, times: int, tail: bytes = b"\0" * 1024):
    """A .tar.gz whose stream is `unit` repeated (compressed as it is made, so the test stays quick)."""
    import zlib
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        chunk = unit * 1000
        for _ in range(times // 1000):
            f.write(squeeze.compress(chunk))
        f.write(squeeze.compress(unit * (times % 1000) + tail))
        f.write(squeeze.flush())
    return path


def test_a_million_directory_headers_are_refused_at_the_member_limit_quickly(tmp_path):
    """2.2 MB of .tar.gz holding 1,000,000 directory entries once took 222 s and 0.4 GB: every member counts."""
    import resource
    import time
    header = tarfile.TarInfo("d/")
    header.type = tarfile.DIRTYPE
    bomb = gz_of_repeated(tmp_path / "dirs.tar.gz", header.tobuf(), 1_000_000)
    assert bomb.stat().st_size < 10 * 2**20  # under the archive size limit: the member limit must stop it
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    sub = read_submission(bomb, TASKS)
    assert time.monotonic() - start < 10
    assert "more than 2000 entries (files, folders, links)" in sub.rejected
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB: under 100 MiB more


def test_a_header_that_declares_a_huge_long_name_is_refused_before_it_is_read(tmp_path):
    import time
    longname = tarfile.TarInfo("././@LongLink")
    longname.type = tarfile.GNUTYPE_LONGNAME
    longname.size = 200 * 2**20  # 200 MiB of "name", mostly zeros: a few hundred KiB compressed
    bomb = tmp_path / "long.tar.gz"
    import zlib
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(bomb, "wb") as f:
        f.write(squeeze.compress(longname.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(200):
            f.write(squeeze.compress(b"a" * 2**20))
        f.write(squeeze.flush())
    start = time.monotonic()
    sub = read_submission(bomb, TASKS)
    assert time.monotonic() - start < 10
    assert "more than 10 MB unpacked" in sub.rejected


def test_a_member_that_claims_more_than_the_limit_is_refused_unread(tmp_path):
    folder = tarfile.TarInfo("big/")
    folder.type = tarfile.DIRTYPE
    folder.size = 50 * 2**20  # a folder "holding" 50 MiB of data that tarfile would decompress to skip
    with tarfile.open(tmp_path / "skip.tar.gz", "w:gz") as tar:
        tar.addfile(folder)
    assert "more than 10 MB unpacked" in read_submission(tmp_path / "skip.tar.gz", TASKS).rejected


def test_an_archive_over_the_size_limit_is_refused_without_opening_it(tmp_path):
    from grader.intake.submission import IntakeLimits
    archive = tmp_path / "huge.zip"
    archive.write_bytes(b"PK" + b"\0" * (2 * 2**20))
    sub = read_submission(archive, TASKS, IntakeLimits(archive_bytes=2**20))
    assert sub.rejected == "the archive is 2.0 MiB, more than the 1 MiB an archive may be"


def test_a_zip_declaring_too_many_entries_is_refused_before_its_directory_is_read(tmp_path):
    from grader.intake.submission import IntakeLimits
    many = make_zip(tmp_path / "many.zip", {f"d{i}/": b"" for i in range(50)})
    sub = read_submission(many, TASKS, IntakeLimits(members=20))
    assert "more than 20 entries" in sub.rejected


def test_folders_links_and_empty_directories_count_as_members(tmp_path):
    from grader.intake.submission import IntakeLimits
    folder = tmp_path / "zoe"
    for i in range(30):
        (folder / f"empty{i}").mkdir(parents=True)
    (folder / "fill.cu").write_text("// fill")
    assert "more than 20 entries" in read_submission(folder, TASKS, IntakeLimits(members=20)).rejected
    assert read_submission(folder, TASKS, IntakeLimits(members=40)).rejected is None


def test_reading_one_submission_is_bounded_in_time(tmp_path):
    from grader.intake.submission import IntakeLimits
    members = {f"f{i}.txt": b"x" for i in range(500)}
    sub = read_submission(make_tar(tmp_path / "slow.tar.gz", members), TASKS, IntakeLimits(seconds=1e-9))
    assert "took longer than 1e-09 s" in sub.rejected


def test_the_rubric_sets_the_intake_limits(rubric):
    from grader.intake.submission import IntakeLimits
    limits = IntakeLimits.from_rubric(rubric.limits)
    assert (limits.archive_bytes, limits.unpacked_bytes, limits.members, limits.seconds) == (
        int(rubric.limits.archive_mib * 2**20), int(rubric.limits.unpacked_mib * 2**20), rubric.limits.members,
        rubric.limits.intake_seconds)


# ---------------------------------------------------------------------------
# One student id, two entries.

def test_of_two_entries_with_one_id_the_one_received_last_is_graded_and_says_so(tmp_path):
    from grader.intake.submission import choose_latest
    folder = tmp_path / "alice"
    folder.mkdir()
    (folder / "fill.cu").write_text("// old")
    archive = make_tar(tmp_path / "alice.tar.gz", {"fill.cu": b"// new"})
    os.utime(folder, (1_700_000_000, 1_700_000_000))
    os.utime(archive, (1_700_000_100, 1_700_000_100))
    bob = make_zip(tmp_path / "bob.zip", {"fill.cu": b"// bob"})
    subs = [read_submission(e, TASKS) for e in (folder, archive, bob)]
    kept, skipped = choose_latest(subs)
    assert [(s.student, s.source.name) for s in kept] == [("alice", "alice.tar.gz"), ("bob", "bob.zip")]
    assert kept[0].files["fill.cu"] == b"// new"
    assert any("alice/ (received 2023-11-14T22:13:20+00:00) has the same student id" in n for n in kept[0].notes)
    assert skipped == ["alice/: another entry with the id alice was received later (alice.tar.gz); skipped"]


def test_on_a_tie_the_archive_is_graded(tmp_path):
    from grader.intake.submission import choose_latest
    folder = tmp_path / "carl"
    folder.mkdir()
    (folder / "fill.cu").write_text("// folder")
    archive = make_zip(tmp_path / "carl.zip", {"fill.cu": b"// archive"})
    for entry in (folder, archive):
        os.utime(entry, (1_700_000_000, 1_700_000_000))
    kept, _ = choose_latest([read_submission(folder, TASKS), read_submission(archive, TASKS)])
    assert [s.source.name for s in kept] == ["carl.zip"]


def test_two_entries_of_one_id_never_share_a_build_folder(tmp_path):
    folder = tmp_path / "dana"
    folder.mkdir()
    archive = make_zip(tmp_path / "dana.zip", {"fill.cu": b"x"})
    keys = {read_submission(e, TASKS).key for e in (folder, archive)}
    assert len(keys) == 2 and all(k.startswith("dana-") for k in keys)
