#!/usr/bin/env bash
# make gradescope: the autograder zip Gradescope installs. Gradescope unpacks the zip into /autograder/source
# and runs setup.sh from there, so the zip's root holds setup.sh, run_autograder and the repository itself
# (grader/, starter/, solution/, Makefile), never a folder around them.
#   usage: grader/gradescope/make_zip.sh OUT.zip [TOKEN_FILE]   (the committed tree: HEAD)
# With TOKEN_FILE (an assignment token, from bin/grader tokens) and the rubric's [service] url set, the zip also
# holds grader/gradescope/service.json and the token beside it: run_autograder then sends each submission to the
# course's grading service (grader/gradescope/bridge.py). The zip holds that token: share it with staff only.
set -euo pipefail
out=${1:?usage: make_zip.sh OUT.zip [TOKEN_FILE]}
token=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$(dirname "$out")"
rm -f "$out"
extra=()
if [ -n "$token" ]; then
  service=$(mktemp -d)
  trap 'rm -rf "$service"' EXIT
  (cd "$here/../.." && python3 -m grader.gradescope.bridge configure --token-file "$token" --out "$service/service.json")
  extra=("$service/service.json" "$service/assignment-token")
fi
git -C "$here/../.." archive --format=zip -o "$(cd "$(dirname "$out")" && pwd)/$(basename "$out")" HEAD
# The two scripts at the root (they are also in grader/gradescope/, where the tree keeps them), and the service's
# configuration in grader/gradescope/, where the bridge reads it.
python3 - "$out" "$here/setup.sh" "$here/run_autograder" ${extra[@]+"${extra[@]}"} <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "a", zipfile.ZIP_DEFLATED) as z:
    for path in sys.argv[2:]:
        name = path.rsplit("/", 1)[-1]
        script = name in ("setup.sh", "run_autograder")
        info = zipfile.ZipInfo(name if script else f"grader/gradescope/{name}")
        info.external_attr = (0o100755 if script else 0o100600) << 16  # executable, as Gradescope runs them
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, open(path, "rb").read())
PY
