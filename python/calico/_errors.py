"""The exceptions of calico: one class per C++ ``calico::ErrorCode``.

Every class derives from :class:`Error` and, where one fits, from the built-in exception
a Python caller would expect (``except ValueError`` catches bad arguments, ``except
OSError`` catches I/O failures, ``except LookupError`` a missing index name).
"""

from __future__ import annotations

from typing import Optional, Tuple


class Error(Exception):
    """A failure reported by calico.

    Attributes:
        code: the C++ error code's name (e.g. ``"checksum mismatch"``), or None for
            errors raised by the Python layer (ClosedError).
        page: ``(space, block)`` of the page the error is about, or None.
    """

    def __init__(self, message: str, code: Optional[str] = None,
                 page: Optional[Tuple[int, int]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.page = page


class InvalidArgumentError(Error, ValueError):
    """A wrong parameter: dimension, k, NaN/inf in a vector, an id, a key's length..."""


class UnknownSpaceError(Error, LookupError):
    """An index (space) name that does not exist in the pool."""


class OutOfRangeError(Error, IndexError):
    """A page at or past its space's end (kPageOutOfRange)."""


PageOutOfRangeError = OutOfRangeError


class PoolFullError(Error, MemoryError):
    """No frame can be freed: every frame of the pool is pinned or latched."""


class IoError(Error, OSError):
    """The operating system reported an error (errno in the message)."""


class ShortReadError(IoError):
    """A read returned fewer bytes than a page."""


class ChecksumMismatchError(Error):
    """A page read from disk failed its checksum (``page`` names it)."""


class CorruptCatalogError(Error):
    """The pool's catalog cannot be parsed, or the directory is not a Calico pool."""


class PageSizeMismatchError(Error, ValueError):
    """The data directory was written with another page size."""


class SpaceExistsError(Error, ValueError):
    """A space (index) of that name exists already."""


class RestartLimitError(Error):
    """An index operation restarted more than its bound (a corrupt structure)."""


class CorruptPageError(Error):
    """A page passed its checksum but holds bytes its index cannot accept (``page``)."""


class ClosedError(Error, ValueError):
    """An operation on a closed pool, or on an index whose pool was closed."""


__all__ = [
    "Error", "InvalidArgumentError", "UnknownSpaceError", "OutOfRangeError",
    "PageOutOfRangeError", "PoolFullError", "IoError", "ShortReadError",
    "ChecksumMismatchError", "CorruptCatalogError", "PageSizeMismatchError",
    "SpaceExistsError", "RestartLimitError", "CorruptPageError", "ClosedError",
]
