# SPDX-License-Identifier: MIT
"""Exceptions: every failure of libhmc is an HMCError with its errno."""

import errno as _errno

from . import _lib
from .enums import Status


class HMCError(OSError):
    """A libhmc call failed.

    ``errno`` is the positive errno, ``strerror`` libhmc's text for it
    (hmc_strerror), ``status`` the reference's Status for it, and the
    message says which call failed on what.
    """

    def __init__(self, err, what=""):
        err = abs(err)
        super().__init__(err, _lib.strerror(err))
        self.what = what

    @property
    def status(self):
        return Status.of_errno(self.errno)

    def __str__(self):
        if self.what:
            return "%s: %s" % (self.what, self.strerror)
        return self.strerror

    def __reduce__(self):
        return (type(self), (self.errno, self.what))


class HMCTimeoutError(HMCError, TimeoutError):
    """A wait reached its deadline (ETIMEDOUT); what it waited for stays."""


class HMCBufferError(HMCError, ValueError):
    """A payload or destination that cannot be used (EINVAL): not a buffer,
    read-only or not contiguous where it must be written, too small."""

    def __init__(self, what):
        super().__init__(_errno.EINVAL, what)

    def __str__(self):
        return self.what

    def __reduce__(self):
        return (type(self), (self.what,))


# The reference's name for a failed status.
HMCStatusError = HMCError


def error(rc, what=""):
    """The exception for libhmc's negative errno @rc."""
    if -rc == _errno.ETIMEDOUT:
        return HMCTimeoutError(rc, what)
    return HMCError(rc, what)


def check(rc, what=""):
    """Raise for a negative return code; return it otherwise."""
    if rc < 0:
        raise error(rc, what)
    return rc
