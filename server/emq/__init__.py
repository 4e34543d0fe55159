"""EchoMQ host library: the Python half of every flow transition.

The Lua half lives in ``scripts/`` (one file per transition). The modules here
gate ids and build keys (``keyspace``), run scripts by SHA (``registry``), map
error replies to exceptions (``errors``), and expose the typed verbs the web
layer and the tests call: ``flows``, ``jobs``, ``pump`` and ``results``.
"""
