"""The seccomp filter of a child: no new processes, no reading or steering another one, and where no bubblewrap
contains the sandbox no sockets and no way out of its process group either (libseccomp)."""

from __future__ import annotations

import errno

#: The system calls the filter refuses, and the errno each then fails with. fork, vfork: EAGAIN, as when the
#: process limit is reached. clone3: ENOSYS, as on an older kernel, because its flags live in memory, out of a
#: filter's reach; the C library then falls back to clone, which the filter can read (threads still work).
#: ptrace, process_vm_readv/writev: EPERM (no reading or steering another process).
REFUSED = {
    "fork": errno.EAGAIN,
    "vfork": errno.EAGAIN,
    "clone3": errno.ENOSYS,
    "ptrace": errno.EPERM,
    "process_vm_readv": errno.EPERM,
    "process_vm_writev": errno.EPERM,
}
#: Refused as well where no namespaces contain the child (the sandbox without bubblewrap: the host's network,
#: processes and folders are its own). socket: no network at all, the one socket the child needs being inherited
#: (socketpair stays allowed); io_uring: its operations (sockets among them) are out of a filter's sight; setsid,
#: setpgid: the child stays in the zygote's process group, which the grader kills whole; unshare, setns: no new
#: namespaces in which to undo the rest.
UNCONTAINED_REFUSED = {
    "socket": errno.EACCES,
    "io_uring_setup": errno.ENOSYS,
    "io_uring_enter": errno.ENOSYS,
    "io_uring_register": errno.ENOSYS,
    "setsid": errno.EPERM,
    "setpgid": errno.EPERM,
    "unshare": errno.EPERM,
    "setns": errno.EPERM,
}
CLONE_THREAD = 0x00010000


def no_fork_filter(contained: bool = True):
    """The seccomp filter of a child, built with libseccomp (``pyseccomp``) but not loaded; None where
    libseccomp is missing or too old to know a call of :data:`REFUSED`.

    Besides :data:`REFUSED`, ``clone`` without ``CLONE_THREAD`` (a process, not a thread) fails with EAGAIN,
    and a call made through another ABI than the native one (i386 ``int 0x80`` or x32 calls on x86_64) with
    EPERM. ``contained=False`` (no bubblewrap around the sandbox) refuses :data:`UNCONTAINED_REFUSED` too.
    Everything else is allowed. libseccomp sets ``no_new_privs`` when the filter is loaded. The zygote
    builds it once; a child loads it."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError):  # RuntimeError: pyseccomp found no libseccomp
        return None
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ERRNO(errno.EPERM))
    refused = REFUSED if contained else {**REFUSED, **UNCONTAINED_REFUSED}
    for name, err in refused.items():
        number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
        if number == -1:  # a name this libseccomp does not know: refuse to pretend we filter
            return None
        if number >= 0:  # below -1: a call this architecture does not have (fork on aarch64)
            rules.add_rule(seccomp.ERRNO(err), number)
    thread = seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0)  # clone's flags lack CLONE_THREAD
    rules.add_rule(seccomp.ERRNO(errno.EAGAIN), "clone", thread)
    return rules


def install_no_fork_filter(rules=None) -> bool:
    """Load ``rules`` (default: a fresh :func:`no_fork_filter`) on this process, irreversibly. Returns whether
    a filter was loaded."""
    rules = no_fork_filter() if rules is None else rules
    if rules is None:
        return False
    try:
        rules.load()
    except OSError:
        return False
    return True
