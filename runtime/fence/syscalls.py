"""A seccomp filter for the job process: no new user namespaces, no kernel keyrings (docs/SECURITY.md).

An unprivileged process may make a user namespace, and inside it is root again, with every other namespace
and the kernel code behind them within reach. A key a job puts in its uid's keyring outlives the job, and job
uids repeat (runtime.fence.sandbox.job_uid). So, after the uid drop and `no_new_privs`, the job loads a
classic BPF filter (x86_64 only; elsewhere it says so in the sandbox notes) that answers:
- `unshare` and `clone` with CLONE_NEWUSER, and `setns`: EPERM;
- `add_key`, `request_key`, `keyctl`: EPERM, so there is no keyring to leave anything in;
- `clone3`: ENOSYS (its flags sit in memory a filter cannot read; glibc then falls back to `clone`);
- any other architecture's or the x32 ABI's system calls: ENOSYS;
- the job's event pipe to its leader kept as the leader made it (docs/SECURITY.md): `dup2` or `dup3` onto its fd,
  `close`, `shutdown` or `ioctl` of it and `fcntl(F_SETFL)` on it (non-blocking writes would drop events): EPERM;
  `close_range`: ENOSYS (the C library and Python then close one fd at a time); `io_uring_*`: ENOSYS (its
  operations never pass this filter);
- `ptrace`, `process_vm_readv`, `process_vm_writev` and `prctl(PR_SET_DUMPABLE)`: EPERM, so no process of the
  job's rewrites another's memory (the job is not dumpable after its uid drop; this keeps it so).
The filter is inherited by every thread and child of the job and cannot be removed.
"""
from __future__ import annotations

import ctypes
import errno
import platform
from typing import Any

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
NR = {"clone": 56, "unshare": 272, "setns": 308, "clone3": 435, "add_key": 248, "request_key": 249, "keyctl": 250,
      "close": 3, "dup2": 33, "dup3": 292, "shutdown": 48, "ioctl": 16, "fcntl": 72, "close_range": 436,
      "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "ptrace": 101,
      "process_vm_readv": 310, "process_vm_writev": 311, "prctl": 157}
F_SETFL, PR_SET_DUMPABLE = 4, 4
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
LD_ABS_W, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
ARCH_OFFSET, NR_OFFSET, ARG0_OFFSET, ARG1_OFFSET = 4, 0, 16, 24  # struct seccomp_data (low words of args)


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(event_fd: int | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k); jumps are relative to the next instruction. With `event_fd`, that fd
    cannot be replaced, closed or made non-blocking."""
    deny, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    pipe: list[Any] = [] if event_fd is None else [
        (JEQ, NR["dup2"], "arg1_is_pipe", None), (JEQ, NR["dup3"], "arg1_is_pipe", None),
        *((JEQ, NR[name], "arg0_is_pipe", None) for name in ("close", "shutdown", "ioctl")),
        (JEQ, NR["fcntl"], "fcntl", None)]
    pipe_checks: list[Any] = [] if event_fd is None else [
        "arg1_is_pipe", (LD_ABS_W, ARG1_OFFSET), (JEQ, event_fd, "deny", None), (RET, RET_ALLOW),
        "arg0_is_pipe", (LD_ABS_W, ARG0_OFFSET), (JEQ, event_fd, "deny", None), (RET, RET_ALLOW),
        "fcntl", (LD_ABS_W, ARG0_OFFSET), (JEQ, event_fd, None, "fcntl_other"),
        (LD_ABS_W, ARG1_OFFSET), (JEQ, F_SETFL, "deny", None), "fcntl_other", (RET, RET_ALLOW)]
    asm: list[Any] = [
        (LD_ABS_W, ARCH_OFFSET), (JEQ, AUDIT_ARCH_X86_64, None, "enosys"),
        (LD_ABS_W, NR_OFFSET), (JGE, X32_SYSCALL_BIT, "enosys", None),
        *((JEQ, NR[name], "enosys", None) for name in ("clone3", "close_range", "io_uring_setup", "io_uring_enter",
                                                        "io_uring_register")),
        *((JEQ, NR[name], "deny", None) for name in ("setns", "add_key", "request_key", "keyctl", "ptrace",
                                                      "process_vm_readv", "process_vm_writev")),
        (JEQ, NR["unshare"], "flags", None), (JEQ, NR["clone"], "flags", None), (JEQ, NR["prctl"], "prctl", None),
        *pipe,
        (RET, RET_ALLOW),
        "flags", (LD_ABS_W, ARG0_OFFSET), (JSET, CLONE_NEWUSER, "deny", None), (RET, RET_ALLOW),
        "prctl", (LD_ABS_W, ARG0_OFFSET), (JEQ, PR_SET_DUMPABLE, "deny", None), (RET, RET_ALLOW),
        *pipe_checks,
        "deny", (RET, deny),
        "enosys", (RET, enosys),
    ]
    labels, code = {}, []
    for item in asm:
        if isinstance(item, str):
            labels[item] = len(code)
        else:
            code.append(item)
    out = []
    for i, ins in enumerate(code):
        if ins[0] in (JEQ, JGE, JSET):
            op, k, jt, jf = ins
            out.append((op, 0 if jt is None else labels[jt] - i - 1, 0 if jf is None else labels[jf] - i - 1, k))
        else:
            out.append((ins[0], 0, 0, ins[1]))
    return out


def load(libc: Any, event_fd: int | None = None) -> str:
    """Load the filter into this process (after no_new_privs): "" when loaded, else why not (the sandbox notes)."""
    if platform.machine() != "x86_64":
        return f"no seccomp filter on {platform.machine()}: the job may make user namespaces and keyring keys"
    code = program(event_fd)
    filters = (_Filter * len(code))(*[_Filter(op, jt, jf, k) for op, jt, jf, k in code])
    prog = _Program(len(code), filters)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"seccomp filter refused: {errno.errorcode.get(ctypes.get_errno(), '?')}"
    return ""
