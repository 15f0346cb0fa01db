"""Intake: task files found anywhere, extras listed, every unsafe or broken submission rejected alone."""
from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest

from grader.intake import MAX_FILES, list_entries, parse_nickname, read_submission

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
