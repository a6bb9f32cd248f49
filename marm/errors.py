"""Errors marm raises on purpose, each with the exit code the CLI returns for it.

    MarmError                  exit 1   anything marm reports as a one-line error
    ├── BadInput               exit 2   the caller's input cannot be used (NUL byte, too long, bad date)
    ├── NotFound               exit 3   an id or name that does not exist
    ├── StoreError             exit 4   the database cannot be used (not SQLite, unwritable)
    │   └── StoreTooNew        exit 4   written by a newer marm than this one
    ├── Refused                exit 5   the write matches a retracted memory (use --force)
    ├── Busy                   exit 6   another process holds the lease (a drain is running)
    └── Unavailable            exit 7   an optional part (model, spaCy, grammar) is missing

The CLI prints ``error: <message>`` on stderr and exits with ``exit_code``; the MCP
server returns the same message as a tool error; hooks log it and exit 0.
"""

from __future__ import annotations


class MarmError(Exception):
    """A failure with a message meant for the user, never a traceback."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInput(MarmError):
    exit_code = 2


class NotFound(MarmError):
    exit_code = 3


class StoreError(MarmError):
    exit_code = 4


class StoreTooNew(StoreError):
    pass


class Refused(MarmError):
    exit_code = 5


class Busy(MarmError):
    exit_code = 6


class Unavailable(MarmError):
    exit_code = 7
