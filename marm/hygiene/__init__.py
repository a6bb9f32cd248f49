"""Keeping memory clean over months (issue 19).

- ``similar``: the word-level tests (near-duplicate, reversal cues, subject overlap):
  pure functions over text.
- ``actions``: what a verdict does (merge a duplicate, supersede a reversed memory),
  shared by the sweep's automatic cases and ``marm review accept``.
- ``drain``: the background sweep that checks each new memory against its nearest
  neighbours only (never the whole store) and refreshes code-staleness flags.
- ``stale``: code baselines and the comparison with the current code graph.
- ``compact``: folding old episodes into one extractive summary per topic and week.
"""
