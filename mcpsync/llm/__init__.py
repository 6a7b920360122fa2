"""Handing a server's tools to a model: :mod:`.anthropic` (Claude, the ``anthropic``
extra) and :mod:`.openai` (the ``openai`` extra) turn the listed tools into the SDK's
tool definitions, run a response's tool calls through a client in parallel threads
(:mod:`.calls`), and answer a server's sampling requests with the SDK's client. Neither
imports its SDK: import the submodule you use."""
