"""The routes of ``spade serve``'s app, one module per protocol (``http``, ``listing``,
``tasks``, ``mcp``, ``websocket``), each with a ``register(app)`` that
:func:`spade_serve.app.create_app` calls. Every route reads what it serves from
:class:`.server_state.ServerState` (``app.state.server``); none holds state of its own.
"""
