"""Landlock: the kernel's unprivileged access control, for the plain-process sandbox.

Where bubblewrap cannot run (typically inside a Docker container, as on Gradescope), a
child of the worker calls ``restrict(readable, writable)`` before it imports student code.
From then on it, and everything it starts, can read and execute only below ``readable``,
write only below ``writable``, open no TCP connection, bind no TCP port (Landlock ABI 4
and later), and neither signal nor reach through abstract UNIX sockets any process outside
its own domain (ABI 6 and later). The repository, solutions/, the hidden tests, /proc and
other students' files are simply not in the lists.

The standard library has no binding; the three system calls go through ctypes, with the
constants of linux/landlock.h. Each right is asked for only when the kernel's ABI knows it.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from collections.abc import Iterable

# System call numbers: the same on every architecture (they were added after the unification).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# File-system rights (handled_access_fs).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI_1_RIGHTS = (1 << 13) - 1  # EXECUTE ... MAKE_SYM: removing and making files, dirs, links, devices
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # what a rule on a non-directory may grant
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
# Network rights (handled_access_net, ABI 4) and scopes (ABI 6).
_BIND_TCP, _CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent, disabled or forbidden
    (a seccomp filter, as in some containers, refuses the system call)."""
    version = _libc.syscall(_CREATE_RULESET, ctypes.c_void_p(None), ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def restrict(readable: Iterable[str], writable: Iterable[str]) -> int:
    """Confine this process for good; return the ABI version used (0: Landlock unavailable,
    nothing done). Paths that do not exist are skipped."""
    abi = abi_version()
    if abi < 1:
        return 0
    file_system = _ABI_1_RIGHTS | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    network = _BIND_TCP | _CONNECT_TCP if abi >= 4 else 0
    scopes = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    # struct landlock_ruleset_attr grew with the ABI; pass the size this kernel knows.
    attributes = struct.pack("=QQQ", file_system, network, scopes)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    buffer = ctypes.create_string_buffer(attributes, len(attributes))
    ruleset = _libc.syscall(_CREATE_RULESET, buffer, ctypes.c_size_t(len(attributes)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _error("landlock_create_ruleset")
    try:
        for path in readable:
            _allow(ruleset, path, READ_RIGHTS)
        for path in writable:
            _allow(ruleset, path, file_system)
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # required to restrict oneself unprivileged
            raise _error("prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _error("landlock_restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine
    try:
        if not stat.S_ISDIR(os.fstat(descriptor).st_mode):
            rights &= FILE_ONLY_RIGHTS
        # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, descriptor), 12)
        if _libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)) != 0:
            raise _error(f"landlock_add_rule({path})")
    finally:
        os.close(descriptor)


def _error(call: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{call}: {os.strerror(number)}")
