"""The console: Valkey commands typed by a learner, run as their sandbox's own Valkey user.

The web layer calls `api.run_line(ConsoleContext, line) -> ConsoleReply`: the
line is split (parse), checked (allow, confine, plan), charged (budget) and run
(run, as_user). The checks make good messages; the boundary is Valkey's ACL
user (server/valkey/acl.py), so a line that slipped past them answers NOPERM.
"""
