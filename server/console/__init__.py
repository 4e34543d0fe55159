"""The console: Valkey commands typed by a learner, run as their sandbox's own Valkey user.

The web layer calls one function, `api.run_line(ConsoleContext, line) ->
ConsoleReply`. A line travels through one module per concern:

    parse.py      the line -> arguments, as valkey-cli splits them (quotes, escapes, caps)
    allow.py      the allowlist: what each command is, where its keys are, its arity
    confine.py    the learner's key names -> the sandbox's keys (and back, for SCAN/KEYS)
    plan.py       a line -> a checked plan (every host-side refusal happens here)
    budget.py     what a write may cost (the sandbox's byte budget) and the index of its names
    as_user.py    one command run as the sandbox's Valkey ACL user, in one round trip
    run.py        the plan run: as that user, or SCAN/KEYS as the site; the printed lines
    api.py        run_line, its context and its reply
    lock.py       a queue's action lock, for a caller that has none of its own
    page.py       the examples a dive gives its console
    transcript.py the last commands and replies, kept in Valkey per sandbox

The checks of plan.py make good messages; the boundary is Valkey's: the
sandbox's ACL user (server/valkey/acl.py) reaches its own keys only, so a
line that slipped past every check still answers NOPERM.
"""
