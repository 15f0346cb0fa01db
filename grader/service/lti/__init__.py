"""The service as an LTI 1.3 tool (docs/lti.md): students and staff arrive from the course's LMS (Canvas, Moodle,
...) logged in. `platforms` reads which platforms may launch it (RESULTS/lti/platforms.json, written by `bin/grader
lti platform`), `keys` keeps the tool's own signing keys, `launch` checks a login and its launch (the OIDC flow
and the platform's id token), `handlers` are the three addresses (/lti/login, /lti/launch, /lti/jwks)."""
