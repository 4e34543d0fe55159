"""The console: Valkey commands typed by a learner, confined to their sandbox.

A line travels through one module per concern, and every refusal happens
before anything is written (most before anything reaches Valkey at all):

    parse.py      the line -> arguments, as valkey-cli splits them (quotes, escapes, caps)
    allow.py      the allowlist: what each command is, where its keys are, its caps
    confine.py    the learner's key names -> the sandbox's keys (and back, for SCAN/KEYS)
    plan.py       a line -> a checked plan (every refusal happens here)
    run.py        the plan run on Valkey: commands, scripts by SHA, SCAN/KEYS
    owners.py     the widgets a write touches: their locks, their index of extra keys
    client.py     the console's RESP2 client (replies shaped as valkey-cli sees them)
    page.py       the examples a dive gives its console
    reply.py      Valkey's reply -> the lines valkey-cli would print
    transcript.py the last commands and replies, kept in Valkey per sandbox

The HTTP side is `server/web/views/console.py` (POST /api/console).
"""
