"""Fixtures of the view tests (defined in ``viewkit``, with the helpers they share)."""

from tests.view.viewkit import browser, page, populated  # noqa: F401 - registers the fixtures
