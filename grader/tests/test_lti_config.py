"""`bin/grader lti` (docs/lti.md): what it prints for the LMS, what it keeps in RESULTS/lti/, and its refusals in
one line."""
from __future__ import annotations

import json
import stat
import threading

import pytest

pytest.importorskip("jwt")

from grader.cli import main as grader  # noqa: E402
from grader.service.lti import keys, platforms  # noqa: E402

BASE = "https://grader.example.edu"


def test_config_prints_the_tools_urls_and_a_canvas_key_that_is_json_and_keeps_the_url(tmp_path, capsys):
    assert grader(["lti", "config", "--results", str(tmp_path), "--url", BASE + "/"]) == 0
    out = capsys.readouterr().out
    canvas = json.loads(out[out.index("{"):out.index("\n}\n") + 2])
    assert (canvas["oidc_initiation_url"], canvas["target_link_uri"], canvas["public_jwk_url"]) == (
        f"{BASE}/lti/login", f"{BASE}/lti/launch", f"{BASE}/lti/jwks")
    placements = canvas["extensions"][0]["settings"]["placements"]
    assert [(p["placement"], p["message_type"]) for p in placements] == [
        ("course_navigation", "LtiResourceLinkRequest"), ("assignment_selection", "LtiDeepLinkingRequest")]
    assert f"Public keyset                                 {BASE}/lti/jwks" in out
    assert platforms.load(tmp_path).tool_url == BASE
    (key,) = keys.keys(tmp_path)
    assert f"(current key {key.kid})" in out
    kept = next((tmp_path / "lti" / "keys").glob("tool-*.pem"))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700


def test_a_rotation_keeps_the_key_before_it_published_and_drops_older_ones(tmp_path, capsys):
    made = [keys.new_key(tmp_path).kid for _ in range(3)]
    assert [k["kid"] for k in keys.jwks(tmp_path)["keys"]] == made[1:]
    assert grader(["lti", "keys", "--results", str(tmp_path), "--rotate"]) == 0
    assert [k["kid"] for k in keys.jwks(tmp_path)["keys"]][0] == made[2]


def test_first_uses_at_once_make_one_key_and_a_reader_never_sees_half_of_one(tmp_path):
    """Two platforms' first requests at once (/lti/jwks, a signature) each ask for the current key while none
    exists: one key is made, and every caller signs with it; a key set read meanwhile holds whole keys only."""
    start, got, seen = threading.Barrier(6), [], []

    def first_use():
        start.wait()
        got.append(keys.current(tmp_path).kid)

    def reader():
        start.wait()
        for _ in range(50):
            seen.extend(k["kid"] for k in keys.jwks(tmp_path)["keys"])  # raises on a half-written key
    threads = [threading.Thread(target=first_use) for _ in range(5)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 5 and len(set(got)) == 1, got
    assert set(seen) <= set(got)
    assert len(list((tmp_path / "lti" / "keys").glob("tool-*.pem"))) == 1


def test_registering_again_replaces_the_platform_and_another_client_id_adds_one(tmp_path):
    common = ["lti", "platform", "--results", str(tmp_path), "--issuer", "https://lms.example", "--login-url",
              "https://lms.example/auth", "--jwks-url", "https://lms.example/jwks"]
    assert grader([*common, "--client-id", "a", "--deployment", "1"]) == 0
    assert grader([*common, "--client-id", "a", "--deployment", "2", "--deployment", "3"]) == 0
    assert grader([*common, "--client-id", "b", "--deployment", "1"]) == 0
    setup = platforms.load(tmp_path)
    assert [(p.client_id, p.deployments) for p in setup.platforms] == [("a", ("2", "3")), ("b", ("1",))]
    assert setup.find("https://lms.example", None) is None  # two registrations: the client id must say which
    assert setup.find("https://lms.example", "b").deployments == ("1",)


@pytest.mark.parametrize("args, words", [
    (["config"], "give --url https://..."),
    (["config", "--url", "ftp://x"], "is not the service's base URL"),
    (["platform", "--issuer", "i", "--client-id", "c", "--deployment", "d", "--login-url", "x", "--jwks-url",
      "https://j"], "its login URL 'x' is not an http(s) URL"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, words):
    assert grader(["lti", args[0], "--results", str(tmp_path), *args[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_a_platforms_file_that_is_not_one_is_named(tmp_path, capsys):
    (tmp_path / "lti").mkdir()
    (tmp_path / "lti" / "platforms.json").write_text("{not json")
    assert grader(["lti", "config", "--results", str(tmp_path), "--url", BASE]) == 1
    err = capsys.readouterr().err.strip()
    assert "platforms.json: not a platforms file this grader can read" in err and len(err.splitlines()) == 1
