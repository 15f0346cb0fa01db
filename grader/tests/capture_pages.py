"""The service's pages as its readers get them, saved as self-contained HTML files: for the screenshots of a GPU run
(docs/gpu-runs/device_run.sh's `pages` step, and test_service_gpu.py with SERVICE_PAGES_OUT).

    python -m grader.tests.capture_pages --device gpu --gpus 0 --out DIR s08-fast s03-tiled-off-by-one

starts `bin/grader serve` on the GPUs, uploads each named student of data/sample-submissions, waits for the
results, and saves each student's attempts and feedback pages, then the staff's queue, the class overview and the
leaderboard, as DIR/NAME.html."""
from __future__ import annotations

import argparse
import io
import sys
import tarfile
import tempfile
from pathlib import Path

from grader.tests.pages_client import PageSession
from grader.tests.service_server import REPO, ServiceUnderTest

CLASS = REPO / "data" / "sample-submissions"


def pack(folder: Path) -> bytes:
    """A sample student's folder as `make submit` packs it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path in sorted(folder.iterdir()):
            tar.add(path, arcname=path.name)
    return out.getvalue()


def save_pages(service: ServiceUnderTest, students: list[str], out: Path) -> dict[str, int]:
    """Each student's attempts and first attempt's feedback, then the staff's pages, as out/NAME.html; returns
    each page's status."""
    saved = {}
    for student in students:
        reader = PageSession(service.port)
        reader.login(service.token(student))
        first = service.request("GET", "/api/v1/jobs", service.token(student))[1]["jobs"][0]["job"]
        saved.update(reader.save({f"{student}-attempts": "/me", f"{student}-feedback": f"/me/attempts/{first}"}, out))
    staff = PageSession(service.port)
    staff.login(service.staff)
    saved.update(staff.save({"staff-queue": "/staff", "staff-overview": "/staff/overview",
                             "leaderboard": "/leaderboard"}, out))
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("students", nargs="+", help="folders of data/sample-submissions")
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    everyone = sorted(p.name for p in CLASS.iterdir() if p.is_dir())
    with tempfile.TemporaryDirectory(prefix="capture-pages-") as tmp:
        service = ServiceUnderTest(Path(tmp), students=everyone, gpus=args.gpus, device=args.device, drain=60)
        service.start(timeout=900)
        try:
            for student in args.students:
                job = service.upload(service.token(student), pack(CLASS / student))
                done = service.wait(service.token(student), job["job"], timeout=600)
                print(f"{student}: job {job['job']} {done['state']}, "
                      f"{done['result']['total'] if done['result'] else '-'} points", flush=True)
            saved = save_pages(service, args.students, args.out)
        finally:
            service.stop()
    print("pages saved: " + ", ".join(f"{name} {status}" for name, status in saved.items()))
    return 0 if all(status == 200 for status in saved.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
