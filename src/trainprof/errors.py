"""One exception tree for the whole tool; each class carries the process exit code.

The CLI catches `TrainprofError` at the top and prints one line, so a user never sees a
traceback for a problem they can fix (bad flag, missing file, batch too big).
"""

from __future__ import annotations


class TrainprofError(Exception):
    """Base class: an error we expected and can explain in one line."""

    exit_code = 1


class UsageError(TrainprofError):
    """Bad command-line flag or configuration value."""

    exit_code = 2


class InputError(TrainprofError):
    """A file or folder the user gave us is missing or unreadable."""

    exit_code = 2


class ResourceError(TrainprofError):
    """The requested work does not fit the machine (memory, device)."""

    exit_code = 2
