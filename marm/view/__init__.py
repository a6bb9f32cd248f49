"""``marm view``: the store rendered as one self-contained HTML page.

The view is a rendering, not a second app (design.md):

- ``data``: gathers what the page shows through the same store and op query functions
  the CLI uses, as plain JSON-ready dicts (raw text: nothing is escaped here).
- ``page``: puts that data into the HTML/CSS/JS template (``static/``) as a
  non-executable JSON block; the page renders every value with ``textContent``, so
  stored text is shown as text and never parsed as markup.
- ``serve``: ``marm view --serve``, a foreground loopback-only HTTP server behind a
  random token whose page can act; each action calls the op registry, like the CLI.

Nothing here imports fastembed, onnxruntime, spaCy, tree-sitter, mcp or numpy.
"""
