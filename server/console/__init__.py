"""The console: `api.run_line` splits a learner's line (parse), checks it (allow, confine, plan),
charges it (budget) and runs it (run, as_user) as the sandbox's Valkey ACL user, the real
boundary: a line that slipped past the checks answers NOPERM."""
