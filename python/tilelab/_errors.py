"""tilelab's exceptions: Error (its .code names the TileLab error code) and one subclass per code."""


class Error(Exception):
    """A TileLab error, with the message the CLI prints; .code is its error code ("compile", "no_device", ...)."""

    code = "error"

    @property
    def message(self):
        return str(self)


class InvalidArgumentError(Error, ValueError):
    """Something malformed: a config value, a SPEC, a tensor of the wrong shape or dtype."""

    code = "invalid_argument"


class NotFoundError(Error, LookupError):
    """A kernel, file or device that does not exist."""

    code = "not_found"


class IoError(Error, OSError):
    """Reading or writing a file failed."""

    code = "io"


class ParseError(Error, ValueError):
    """A file or string could not be parsed (a layout SPEC, a trace)."""

    code = "parse"


class UnsupportedError(Error):
    """Valid, but this kernel, device or build cannot do it (can_implement refusals)."""

    code = "unsupported"


class NoDeviceError(Error):
    """No usable GPU."""

    code = "no_device"


class CudaError(Error):
    """A CUDA call failed."""

    code = "cuda"


class CompileError(Error):
    """NVRTC or ptxas rejected a kernel."""

    code = "compile"


class FaultError(Error):
    """A kernel faulted (illegal address, trap, ...)."""

    code = "fault"


class KernelTimeoutError(Error, TimeoutError):
    """A launch ran past its watchdog."""

    code = "timeout"


class InternalError(Error):
    """A bug in TileLab."""

    code = "internal"


ERRORS = {cls.code: cls for cls in (InvalidArgumentError, NotFoundError, IoError, ParseError, UnsupportedError,
                                    NoDeviceError, CudaError, CompileError, FaultError, KernelTimeoutError,
                                    InternalError)}


def error_class(code):
    """The exception class of an error code (what the extension module raises)."""
    return ERRORS.get(code, Error)
