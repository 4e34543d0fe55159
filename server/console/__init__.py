"""The console: Valkey commands typed by a learner, confined to their sandbox.

A line travels through one module per concern, and every refusal happens
before anything reaches Valkey:

    parse.py      the line -> arguments, as valkey-cli splits them (quotes, escapes, caps)
    allow.py      the allowlist: what each command is, where its keys are, its caps
    confine.py    the learner's key names -> the sandbox's keys (and back, for SCAN/KEYS)
    run.py        a checked plan, then its execution on Valkey
    reply.py      Valkey's reply -> the lines valkey-cli would print
    transcript.py the last commands and replies, kept in Valkey per sandbox

The HTTP side is `server/web/views/console.py` (POST /api/console).
"""
