"""EchoMQ host library: the Python half of every flow transition (the Lua half: ``scripts/``).

``keyspace`` gates ids and builds keys, ``registry`` runs scripts by SHA, ``errors`` types
refusals; ``flows``, ``jobs``, ``pump`` and ``results`` are the verbs callers use.
"""
