"""The submission as an archive: a .tar.gz of 1,000,000 directory headers (5 MB), which intake once read
whole (222 s, 0.4 GB) because it counted files and bytes but not entries."""
import tarfile
import zlib
from pathlib import Path


def build(path: Path) -> None:
    header = tarfile.TarInfo("d/")
    header.type = tarfile.DIRTYPE
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        chunk = header.tobuf() * 1000
        for _ in range(1000):
            f.write(squeeze.compress(chunk))
        f.write(squeeze.compress(b"\0" * 1024))
        f.write(squeeze.flush())
