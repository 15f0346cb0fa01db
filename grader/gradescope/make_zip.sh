#!/usr/bin/env bash
# make gradescope: the autograder zip Gradescope installs. Gradescope unpacks the zip into /autograder/source
# and runs setup.sh from there, so the zip's root holds setup.sh, run_autograder and the repository itself
# (grader/, starter/, solution/, Makefile), never a folder around them.
#   usage: grader/gradescope/make_zip.sh OUT.zip   (the committed tree: HEAD)
set -euo pipefail
out=${1:?usage: make_zip.sh OUT.zip}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$out")"
rm -f "$out"
git -C "$here/../.." archive --format=zip -o "$(cd "$(dirname "$out")" && pwd)/$(basename "$out")" HEAD
# The two scripts at the root (they are also in grader/gradescope/, where the tree keeps them).
python3 - "$out" "$here/setup.sh" "$here/run_autograder" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "a", zipfile.ZIP_DEFLATED) as z:
    for path in sys.argv[2:]:
        info = zipfile.ZipInfo(path.rsplit("/", 1)[-1])
        info.external_attr = 0o100755 << 16  # executable, as Gradescope runs them
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, open(path, "rb").read())
PY
