"""The routes of ``spade serve``'s app, one module per protocol, each with a ``register(app)``
that :func:`spade_serve.app.create_app` calls:

* :mod:`.http`: OpenEnv's plain HTTP (``/reset``, ``/step``, ``/state``, ``/metadata``,
  ``/schema``, ``/health``), a served environment's OpenAPI document, ``/status`` and
  ``DELETE /sessions/{id}``;
* :mod:`.listing`: ``GET /envs`` and ``GET /envs/{env_id}`` (:mod:`spade_serve.listing`);
* :mod:`.tasks`: OpenEnv's Task API (:mod:`spade_serve.tasks`);
* :mod:`.mcp`: ``/mcp`` (:mod:`spade_serve.mcp_tools`);
* :mod:`.websocket`: OpenEnv's WebSocket protocol (``/ws``).

Every route reads what it serves from :class:`.server_state.ServerState` (``app.state.server``:
the session manager, its catalog, the Task API, the MCP endpoint); none holds state of its own.
"""
