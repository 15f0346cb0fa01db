"""Issue 21's GPU corpus entries graded for real (a mini-batch of the hostile corpus, a normal submission after
the ones that leave processes behind), then the sanitizer entry with racecheck on."""
import json, shutil, sqlite3, subprocess, sys, time
from pathlib import Path
HERE = Path(__file__).resolve().parent
STAGE = HERE.parent
sys.path.insert(0, str(STAGE))
from grader.tests.test_hostile_corpus import load_corpus, hand_in, fast_rubric
T0 = time.monotonic()
NAMES = ["hidden-syscall", "runtime-resolved-libc", "detached-background", "fork-holds-gpu", "background-thread-gpu",
         "quadratic-precheck", "message-flood", "duplicate-ids", "sanitizer-detect"]
corpus = {e.name: e for e in load_corpus() if e.name in NAMES}

def batch(tag, entries, tools=()):
    tmp = HERE / tag
    shutil.rmtree(tmp, ignore_errors=True)
    subs = tmp / "subs"
    subs.mkdir(parents=True)
    for i, e in enumerate(entries):
        hand_in(e, subs, f"h{i:02d}-{e.name}")
        normal = subs / f"h{i:02d}-zz-normal"
        normal.mkdir()
        for task in ("fill", "add"):
            shutil.copy(STAGE / "solution" / "kernels" / f"{task}.cu", normal)
    t = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--results", str(tmp / "results"),
                          "--work", str(tmp / "work"), "--rubric", str(fast_rubric(tmp, tools)), "--no-progress",
                          "--jobs", "16"], cwd=STAGE, capture_output=True, text=True, timeout=520)
    print(f"== {tag}: grade exit {run.returncode} in {time.monotonic() - t:.0f}s\n{run.stderr[-1500:]}", flush=True)
    db = sqlite3.connect(tmp / "results" / "grades.sqlite")
    for student, status, rejected, seconds, notes, sid in db.execute(
            "SELECT student, status, rejected, seconds, notes, id FROM submissions ORDER BY student"):
        name = student.split("-", 1)[1]
        e = corpus.get(name)
        print(f"{student}: {status} {seconds:.1f}s rejected={rejected!r} notes={notes[:300]}")
        task = e.task if e else "fill"
        for kind, st, msg, flag in db.execute("SELECT kind, status, message, flag FROM cases WHERE submission_id=? "
                                              "AND task=? ORDER BY id", (sid, task)):
            print(f"    {task} {kind} {st} flag={flag!r} {msg[:160]!r}")
        for tool, st, err, shape in db.execute("SELECT tool, status, errors, shape FROM sanitizer_runs WHERE "
                                               "submission_id=? AND task=?", (sid, task)):
            print(f"    sanitizer {tool} {st} errors={err} shape={shape}")
        if e:
            print(f"    EXPECTED {e.status} {e.kind} {e.case_status} reason={e.reason!r} sanitizer={e.sanitizer!r}")

batch("main", [corpus[n] for n in NAMES if n != "sanitizer-detect"])
batch("sanitizer", [corpus["sanitizer-detect"]], ("racecheck",))
print(f"total {time.monotonic() - T0:.0f}s")
