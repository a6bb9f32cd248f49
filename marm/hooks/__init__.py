"""Agent hooks: what Claude Code, Codex CLI and Gemini CLI send, normalised into one
event record, answered by one handler per event, and rendered back in each agent's JSON.

    agent JSON on stdin --adapters.parse--> HookEvent --handlers.HANDLERS--> context text
                                            (frozen)                          |
    agent JSON on stdout <--adapters.render-------------------------------- (or nothing)

``run.main`` is the process entry (``marm hook EVENT --agent NAME``): it never blocks the
agent. Any failure exits 0 with one line on stderr and nothing on stdout.
"""
