# SPDX-License-Identifier: MIT
"""Status, MemoryType and ConnType: the reference HMC's names, our values;
AmoOp: libhmc's remote atomics.

The values of MemoryType and ConnType members that libhmc implements are
libhmc's own (enum hmc_mem_type, enum hmc_transport); the reference's names
that mean the same thing are aliases.
"""

import errno
from enum import IntEnum


class Status(IntEnum):
    """The reference's status_t; libhmc's errors map onto it (see of_errno)."""
    SUCCESS = 0
    ERROR = 1
    UNSUPPORT = 2
    INVALID_CONFIG = 3
    TIMEOUT = 4
    NOT_FOUND = 5

    @classmethod
    def of_errno(cls, err):
        """The status for a (positive or negative) errno."""
        err = abs(err)
        if err == 0:
            return cls.SUCCESS
        return _ERRNO_STATUS.get(err, cls.ERROR)


_ERRNO_STATUS = {
    errno.ETIMEDOUT: Status.TIMEOUT,
    errno.EOPNOTSUPP: Status.UNSUPPORT,
    errno.EPROTONOSUPPORT: Status.UNSUPPORT,
    errno.ENODEV: Status.UNSUPPORT,
    errno.EINVAL: Status.INVALID_CONFIG,
    errno.ERANGE: Status.INVALID_CONFIG,
    errno.EMSGSIZE: Status.INVALID_CONFIG,
    errno.ENOENT: Status.NOT_FOUND,
    errno.ENOTCONN: Status.NOT_FOUND,
    errno.ESRCH: Status.NOT_FOUND,
}


class MemoryType(IntEnum):
    """Where a ConnBuffer (or a payload) lives.

    CPU, CUDA, ROCM, ASCEND (AscendCL), CNRT (Cambricon) and MUSA (Moore
    Threads) are libhmc's types (enum hmc_mem_type); NVIDIA_GPU, AMD_GPU,
    CAMBRICON_MLU and MOORE_GPU are the reference's names for four of them,
    ASCEND_NPU memfabric's for Ascend. DEFAULT picks the first device
    runtime with a device (CUDA, ROCm, Ascend, CNRT, MUSA), else CPU.
    """
    CPU = 0
    CUDA = 1
    ROCM = 2
    ASCEND = 3
    CNRT = 4
    MUSA = 5
    NVIDIA_GPU = 1
    AMD_GPU = 2
    ASCEND_NPU = 3
    CAMBRICON_MLU = 4
    MOORE_GPU = 5
    DEFAULT = -1


class ConnType(IntEnum):
    """The transport between two peers (enum hmc_transport).

    RDMA is the reference's name for libhmc's ibverbs transport (VERBS).
    SHM is libhmc's own: a peer on the same host maps our buffer.
    TCP is libhmc's own too: one-sided transfers over TCP streams.
    """
    UCX = 1
    VERBS = 2
    RDMA = 2
    SHM = 3
    TCP = 4


class AmoOp(IntEnum):
    """A remote atomic's operation (enum hmc_amo_op), for Session.atomic():
    FETCH reads; SET and SWAP store the value; CSWAP stores it where the
    word equals ``compare``; ADD, AND, OR and XOR combine it with the word.
    Each gives the word's old value when fetched (FETCH must be)."""
    FETCH = 0
    SET = 1
    SWAP = 2
    CSWAP = 3
    ADD = 4
    AND = 5
    OR = 6
    XOR = 7
