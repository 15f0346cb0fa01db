"""The service benchmark's own arithmetic and archives (grader/service/bench.py); its runs are recorded under
docs/gpu-runs/, and its rush's parts are tested against a real service in test_service_rush.py."""
from __future__ import annotations

import io
import tarfile

from grader.service.bench import solution_archive


def members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def test_a_reupload_archive_differs_from_its_salts_archive_in_the_changed_files_only(registry):
    base = members(solution_archive("s"))
    one = members(solution_archive("s", changed={"add.cu": "0"}))
    two = members(solution_archive("s", changed={"add.cu": "0", "dot.cu": "1"}))
    assert sorted(base) == sorted(t.file for t in registry.tasks) == sorted(one) == sorted(two)
    assert [f for f in base if base[f] != one[f]] == ["add.cu"]
    assert [f for f in one if one[f] != two[f]] == ["dot.cu"]  # each re-upload: one file more than the last
    assert members(solution_archive("t"))["fill.cu"] != base["fill.cu"]  # another salt: every file differs
