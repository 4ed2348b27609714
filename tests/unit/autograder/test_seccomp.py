"""The sandbox's seccomp filters (``autograder.sandboxed.seccomp``), each installed in a plain child process: no new
process, no tracing, no foreign ABI; without bubblewrap's namespaces, no socket, session or namespace either.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap

import pytest

from autograder import sandbox as sb
from autograder.sandboxed import seccomp

ROOT = sb.SANDBOXED.parent.parent
LIMITS = {"max_lines": 50, "max_chars": 10_000}


def stream_text(outputs, name="stdout") -> str:
    return "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == name)


# ---------------------------------------------------------------- the seccomp filter


def test_no_fork_filter_refuses_processes_but_not_threads():
    code = textwrap.dedent(
        """
        import os, subprocess, sys, threading
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        assert seccomp.install_no_fork_filter()
        box = []
        t = threading.Thread(target=box.append, args=(1,)); t.start(); t.join()
        for attempt in (os.fork, lambda: subprocess.run(["true"])):
            try:
                attempt()
                print("created a process"); os._exit(1)
            except BlockingIOError:
                pass
        print("threads", box)
        """
    )
    if seccomp.no_fork_filter() is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    done = subprocess.run([sys.executable, "-c", code, str(sb.SANDBOXED.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "threads [1]"


#: System call numbers of the calls the filter refuses besides fork, on the architectures we test.
SYSCALLS = {
    "x86_64": {"getpid": 39, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "clone3": 435},
    "aarch64": {"getpid": 172, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "clone3": 435},
}


@pytest.mark.skipif(platform.machine() not in SYSCALLS, reason="system call numbers known for x86_64 and aarch64")
def test_no_fork_filter_refuses_tracing_clone3_and_foreign_abis():
    code = textwrap.dedent(
        """
        import ctypes, errno, json, mmap, os, platform, sys
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        nr = json.loads(sys.argv[2])
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long

        def call(number, *args):
            ctypes.set_errno(0)
            done = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
            return errno.errorcode[ctypes.get_errno()] if done == -1 else "allowed"

        def i386_getpid():  # mov eax, 20; int 0x80; ret: getpid through the 32-bit ABI
            code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            code.write(b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3")
            done = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(code)))()
            return "allowed" if done > 0 else errno.errorcode[-done]

        x86 = platform.machine() == "x86_64"
        i386_works = x86 and i386_getpid() == "allowed"  # kernels without 32-bit emulation never reach a filter
        assert seccomp.install_no_fork_filter()
        seen = {
            "getpid": call(nr["getpid"]),
            "ptrace": call(nr["ptrace"], 0, 0, 0, 0),  # PTRACE_TRACEME
            "process_vm_readv": call(nr["process_vm_readv"], os.getpid(), 0, 0, 0, 0, 0),
            "process_vm_writev": call(nr["process_vm_writev"], os.getpid(), 0, 0, 0, 0, 0),
            "clone3": call(nr["clone3"], 0, 0),
        }
        if x86:
            seen["x32 getpid"] = call(0x40000000 | nr["getpid"])
        if i386_works:
            seen["i386 getpid"] = i386_getpid()
        print(json.dumps(seen))
        """
    )
    if seccomp.no_fork_filter() is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    numbers = json.dumps(SYSCALLS[platform.machine()])
    done = subprocess.run(
        [sys.executable, "-c", code, str(sb.SANDBOXED.parent), numbers], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    expected = {
        "getpid": "allowed",
        "ptrace": "EPERM",
        "process_vm_readv": "EPERM",
        "process_vm_writev": "EPERM",
        "clone3": "ENOSYS",  # so that the C library falls back to clone, whose flags the filter reads
    }
    assert {k: seen[k] for k in expected} == expected
    for abi in ("x32 getpid", "i386 getpid"):  # another ABI would have other numbers: refused whole
        assert seen.get(abi, "EPERM") == "EPERM", abi


def test_without_namespaces_the_filter_also_refuses_sockets_sessions_and_namespaces():
    code = textwrap.dedent(
        """
        import ctypes, os, socket, sys
        sys.path.insert(0, sys.argv[1])
        from sandboxed import seccomp
        libc = ctypes.CDLL(None, use_errno=True)

        def unshare():  # os.unshare is Python 3.12's
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
                raise OSError(ctypes.get_errno(), "unshare")

        a, b = socket.socketpair()  # made before: the child's one socket is inherited
        assert seccomp.install_no_fork_filter(seccomp.no_fork_filter(contained=False))
        a.sendall(b"x"); assert b.recv(1) == b"x"  # and it still works
        for name, attempt in (("socket", lambda: socket.socket()), ("unix", lambda: socket.socket(socket.AF_UNIX)),
                              ("setsid", os.setsid), ("setpgid", lambda: os.setpgid(0, 0)),
                              ("unshare", unshare)):
            try:
                attempt()
                print("allowed", name)
            except OSError as err:
                print("refused", name, err.errno)
        """
    )
    if seccomp.no_fork_filter(contained=False) is None:
        pytest.skip("libseccomp (pyseccomp) is not available here")
    done = subprocess.run([sys.executable, "-c", code, str(sb.SANDBOXED.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == [
        "refused socket 13",
        "refused unix 13",
        "refused setsid 1",
        "refused setpgid 1",
        "refused unshare 1",
    ]
