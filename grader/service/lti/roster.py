"""The roster from the LMS (LTI Names and Role Provisioning Services): the members of each course a launch came
from, read with the tool's access token; its Learners (active) become the stored roster, as `bin/grader tokens
--roster` stores a CSV's. A student's id is the first of the platform's user keys the LMS gives (its SIS id, e-mail
or own user id, as a launch names the student); every one of them is kept as an id the launch and the intake
match. `bin/grader lti roster` runs it; the service runs it each hour."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.intake.roster import Person
from grader.service.lti import platforms, services
from grader.service.lti.launch import MEMBERSHIP
from grader.store.jobs import Jobs
from grader.store.store import Store

MEMBERS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 100
LEARNER_ROLES = {f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}/Learner#Learner", "Learner"}
# a member's field for each of Platform.user_keys (a launch's claim names); the others have no member field
MEMBER_FIELD = {"lis.person_sourcedid": "lis_person_sourcedid", "email": "email", "sub": "user_id"}


@dataclass(frozen=True)
class Imported:
    course: str  # the platform and course, as the staff read them
    learners: int


def members(tokens: services.Tokens, platform: platforms.Platform, url: str) -> list[dict]:
    """Every member of the course, page after page (the body's `next`, or the Link header's rel="next")."""
    out, page = [], url
    for _ in range(MAX_PAGES):
        token = tokens.token(platform, services.ROSTER_SCOPE)
        body, headers = services.call("GET", page, None, {"Accept": MEMBERS_TYPE, "Authorization": f"Bearer {token}"})
        try:
            data = json.loads(body)
            out += list(data["members"])
        except (ValueError, KeyError, TypeError):
            raise services.ServiceFailed(f"{page} did not answer with a membership container") from None
        link = re.search(r'<([^>]+)>\s*;\s*rel="?next"?', headers.get("Link", "") or headers.get("link", ""))
        page = data.get("next") or (link.group(1) if link else None)
        if not page:
            return out
    raise services.ServiceFailed(f"{url}: more than {MAX_PAGES} pages of members")


def learners(platform: platforms.Platform, found: list[dict]) -> list[Person]:
    people = {}
    for m in found:
        roles = set(m.get("roles") or [])
        if not roles & LEARNER_ROLES or (m.get("status") or "Active") != "Active":
            continue
        ids = [str(m[MEMBER_FIELD[k]]).strip() for k in platform.user_keys
               if k in MEMBER_FIELD and m.get(MEMBER_FIELD[k])]
        if not ids:
            continue
        people.setdefault(ids[0], Person(ids[0], str(m.get("name") or ""), tuple(dict.fromkeys(ids))))
    return list(people.values())


def import_roster(results: Path, tokens: services.Tokens | None = None) -> list[Imported]:
    """Reads every course a launch came from and stores their Learners as the roster (replacing it); nothing is
    stored when a course cannot be read (ServiceFailed says which)."""
    tokens = tokens or services.Tokens(results)
    setup = platforms.load(results)
    store = Store(Path(results) / "grades.sqlite")
    try:
        courses = Jobs(store).lti_contexts()
        if not courses:
            raise services.ServiceFailed("no course has launched this service yet: the roster comes from a course "
                                         "once someone (an instructor, say) has opened the service from it")
        people: dict[str, Person] = {}
        done = []
        for c in courses:
            platform = setup.find(c["issuer"], c["client_id"])
            if platform is None:
                continue
            these = learners(platform, members(tokens, platform, c["memberships"]))
            for person in these:
                people.setdefault(person.student, person)
            done.append(Imported(f"{platform.label}: {c['title'] or c['context_id']}", len(these)))
        store.save_roster(sorted(people.values(), key=lambda p: p.student))
        return done
    finally:
        store.close()
