"""The submission as a .tar.gz whose members are dated years back (2001-09-09, as `touch -d` or any archiver sets
them): fill.cu of this folder, under the student's own folder name. The grader once took the newest member time
as the time received; it must take the archive's own time on the grading machine (received_from "file")."""
import io
import tarfile
from pathlib import Path

MEMBER_TIME = 1_000_000_000  # 2001-09-09T01:46:40Z


def build(path: Path) -> None:
    student = Path(path).name.removesuffix(".tar.gz")
    source = (Path(__file__).parent / "fill.cu").read_bytes()
    with tarfile.open(path, "w:gz") as tar:
        folder = tarfile.TarInfo(student)
        folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, MEMBER_TIME
        tar.addfile(folder)
        member = tarfile.TarInfo(f"{student}/fill.cu")
        member.size, member.mode, member.mtime = len(source), 0o644, MEMBER_TIME
        tar.addfile(member, io.BytesIO(source))
