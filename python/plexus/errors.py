"""Exceptions of the plexus package: one class per status code of the C API
(sdk/include/plexus/status.h), all derived from :class:`Error`."""

from typing import Dict, Type


class Error(Exception):
    """A failure reported by Plexus.

    ``code`` is the C API's status code (an ``int``), ``code_name`` its name
    (``"INVALID_ARGUMENT"``) and ``message`` the core's message, which names
    the file, input, layer or backend at fault.
    """

    code = 10
    code_name = "INTERNAL"

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.message = message
        if code >= 0 and code != type(self).code:
            self.code = code
            self.code_name = _NAMES.get(code, "UNKNOWN")


class InvalidArgumentError(Error, ValueError):
    """A bad value: an option, a path, an input's dtype or shape, a name."""
    code, code_name = 1, "INVALID_ARGUMENT"


class NotFoundError(Error, LookupError):
    """A named thing does not exist."""
    code, code_name = 2, "NOT_FOUND"


class AlreadyExistsError(Error):
    """A unique name or id is taken."""
    code, code_name = 3, "ALREADY_EXISTS"


class UnavailableError(Error):
    """No usable device or resource right now."""
    code, code_name = 4, "UNAVAILABLE"


class UnsupportedError(Error):
    """A valid request that the backends or the importer do not do."""
    code, code_name = 5, "UNSUPPORTED"


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed."""
    code, code_name = 6, "OUT_OF_MEMORY"


class IncompatibleError(Error):
    """An ABI or version mismatch."""
    code, code_name = 7, "INCOMPATIBLE"


class IOFailedError(Error, OSError):
    """A file or operating-system call failed (a model file that cannot be read)."""
    code, code_name = 8, "IO_ERROR"


class FailedPreconditionError(Error):
    """The object is not in a state that allows the call."""
    code, code_name = 9, "FAILED_PRECONDITION"


class InternalError(Error):
    """A bug in Plexus or a backend: an invariant does not hold."""
    code, code_name = 10, "INTERNAL"


#: The class raised for each status code.
BY_CODE: Dict[int, Type[Error]] = {
    c.code: c
    for c in (InvalidArgumentError, NotFoundError, AlreadyExistsError, UnavailableError,
              UnsupportedError, OutOfMemoryError, IncompatibleError, IOFailedError,
              FailedPreconditionError, InternalError)
}
_NAMES = {code: cls.code_name for code, cls in BY_CODE.items()}
