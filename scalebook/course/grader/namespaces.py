"""The sandbox's kernel-facing pieces: the seccomp filter both backends load, and the namespaces backend,
which builds a sandbox's filesystem itself (as root, with util-linux `unshare` and `_enter` below) where
bubblewrap is not installed.

The seccomp filter refuses new user namespaces: `unshare` and `clone` with CLONE_NEWUSER get EPERM, `clone3`
gets ENOSYS (its flags sit in memory a filter cannot read; the C library then falls back to `clone`), and so
does any call through another ABI (x32, i386). bubblewrap loads it with `--seccomp`; `_enter` with prctl.

Keyrings are not namespaced: a process possesses the keys of the session keyring it inherited, whatever its
uid, and may read or revoke them (keyrings(7), "Possession"). So every sandbox, of either backend, starts in a
new, empty, anonymous session keyring of its own (`keyring_command`: keyctl(2) KEYCTL_JOIN_SESSION_KEYRING with
no name, https://man7.org/linux/man-pages/man2/keyctl.2.html).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import struct
import sys
from pathlib import Path

__all__ = ["seccomp_filter", "unshare_command", "keyring_command"]

# The filter is classic BPF over struct seccomp_data: the architecture at offset 4, the call at 0, its flags at 16.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_NR = {"x86_64": {"clone": 56, "unshare": 272, "clone3": 435}, "aarch64": {"clone": 220, "unshare": 97, "clone3": 435}}
_CLONE_NEWUSER = 0x10000000


def seccomp_filter() -> bytes:
    """The compiled filter (struct sock_filter[]) that refuses user namespaces on this machine's architecture."""
    machine = os.uname().machine
    if machine not in _AUDIT_ARCH:
        raise OSError(f"no seccomp filter for architecture {machine!r} (known: {', '.join(_AUDIT_ARCH)})")
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    nr = _NR[machine]
    program = [
        (ld, 0, 0, 4),  # 0: the architecture
        (jeq, 0, 9, _AUDIT_ARCH[machine]),  # 1: another ABI -> 11
        (ld, 0, 0, 0),  # 2: the syscall number
        (jge, 7, 0, 0x40000000),  # 3: x32 -> 11
        (jeq, 7, 0, nr["clone3"]),  # 4: -> 12
        (jeq, 2, 0, nr["unshare"]),  # 5: -> 8
        (jeq, 1, 0, nr["clone"]),  # 6: -> 8
        (ret, 0, 0, allow),  # 7
        (ld, 0, 0, 16),  # 8: the low half of the first argument, the flags
        (jset, 1, 0, _CLONE_NEWUSER),  # 9: -> 11
        (ret, 0, 0, allow),  # 10
        (ret, 0, 0, eperm),  # 11
        (ret, 0, 0, enosys),  # 12
    ]
    return b"".join(struct.pack("=HBBI", *op) for op in program)


_KEYCTL = {"x86_64": 250, "aarch64": 219}  # syscall numbers (glibc has no wrapper)
# Joins a new anonymous session keyring (operation 1, KEYCTL_JOIN_SESSION_KEYRING, name NULL), then runs the
# program. ENOSYS (no keyrings in this kernel) and EPERM (a seccomp filter, which everything below inherits,
# refuses keyctl) leave no keyring to reach; any other failure stops the sandbox from starting.
_NEW_KEYRING = ("import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                "if libc.syscall({nr}, 1, None) < 0 and ctypes.get_errno() not in ({enosys}, {eperm}):\n"
                "    sys.exit('keyctl(KEYCTL_JOIN_SESSION_KEYRING): ' + os.strerror(ctypes.get_errno()))\n"
                "os.execvp(sys.argv[1], sys.argv[1:])")


def keyring_command() -> list[str]:
    """The command prefix that runs a program in a new, empty session keyring of its own, so that it can
    neither read nor revoke the keys of the grader's."""
    machine = os.uname().machine
    if machine not in _KEYCTL:
        raise OSError(f"no keyctl syscall number for architecture {machine!r} (known: {', '.join(_KEYCTL)})")
    code = _NEW_KEYRING.format(nr=_KEYCTL[machine], enosys=errno.ENOSYS, eperm=errno.EPERM)
    return [sys.executable, "-I", "-S", "-c", code]


def unshare_command(spec: Path, pythonpath: str) -> list[str]:
    """The command line that carries out the plan in `spec` (JSON) in new namespaces with util-linux `unshare`
    (root only) and `_enter`, importing scalebook from `pythonpath`."""
    return ["unshare", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child=SIGKILL",
            "--propagation", "private", "--", sys.executable, "-I", "-c",
            "import sys; sys.path.insert(0, sys.argv[2]); "
            "from scalebook.course.grader.namespaces import _enter; _enter(sys.argv[1])",
            str(spec), pythonpath]


_MS = {"rdonly": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "remount": 32, "bind": 4096, "rec": 16384}
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def _mount(source: str | None, target: str, fstype: str | None, flags: tuple[str, ...], data: str = "") -> None:
    """mount(2), through libc (the standard library has no binding)."""
    libc = ctypes.CDLL(None, use_errno=True)
    bits = sum(_MS[f] for f in flags)
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), bits,
                  data.encode() or None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _bind(source: str, target: str, read_only: bool, device: bool = False) -> None:
    """Bind `source` on `target` (created), nosuid, and nodev unless it is a `device` meant to be opened."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):  # a file under a read-only bind (a mask) is there already
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, ("bind", "rec"))
    flags = ("remount", "bind", "nosuid") + (() if device else ("nodev",)) + (("rdonly",) if read_only else ())
    _mount(None, target, None, flags)


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # syscall numbers (glibc has no wrapper)


def _pivot_root(root: str) -> None:
    """Make `root` the root of this mount namespace and detach the old one: unlike chroot, nothing is left
    to climb back to, even for a process that gains CAP_SYS_CHROOT in a user namespace of its own."""
    libc = ctypes.CDLL(None, use_errno=True)
    os.chdir(root)
    os.mkdir(".old")
    if libc.syscall(_PIVOT_ROOT[os.uname().machine], b".", b".old") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root")
    os.chdir("/")
    if libc.umount2(b"/.old", 2) != 0:  # MNT_DETACH
        raise OSError(ctypes.get_errno(), "umount /.old")
    os.rmdir("/.old")


def _install_seccomp(program: bytes) -> None:
    """Load the seccomp filter `program` for this process and whatever it executes (prctl, as root)."""
    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    code = ctypes.create_string_buffer(program, len(program))
    fprog = Fprog(len(program) // 8, ctypes.addressof(code))
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def _enter(spec_path: str) -> None:
    """pid 1 of an `unshare` sandbox, root in new mount, pid, net, ipc and uts namespaces: build the plan's
    filesystem on a tmpfs, pivot into it, bring up loopback, and exec the program as its own uid under the
    seccomp filter. The spec (JSON) holds the plan's `steps`, the `root` to build on, the `inodes` of each
    tmpfs, the `seccomp` filter's file, the `home` to start in, and the program's `argv` and `env`."""
    import fcntl
    import socket

    spec = json.loads(Path(spec_path).read_text())
    root = spec["root"]
    program = Path(spec["seccomp"]).read_bytes()
    _mount("tmpfs", root, "tmpfs", ("nosuid", "nodev"), "mode=0755")
    for kind, *rest in spec["steps"]:
        at = root + rest[-1]
        if kind in ("ro-bind", "bind"):
            _bind(rest[0], at, kind == "ro-bind")
        elif kind == "symlink":
            os.symlink(rest[0], at)
        elif kind == "dir" and not os.path.isdir(at):  # an existing one (the private /tmp) keeps its mode
            os.makedirs(at)
            os.chmod(at, 0o755)
        elif kind == "tmpfs":
            os.makedirs(at, exist_ok=True)
            _mount("tmpfs", at, "tmpfs", ("nosuid", "nodev"),
                   f"mode={rest[0]},size={rest[1]},nr_inodes={spec['inodes']}")
        elif kind == "file":
            with os.fdopen(int(rest[0]), "rb") as src, open(at, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(at, 0o644)
        elif kind == "proc":
            os.makedirs(at, exist_ok=True)
            _mount("proc", at, "proc", ("nosuid", "nodev", "noexec"))
        elif kind == "devpts":
            os.makedirs(at, exist_ok=True)
            if int(rest[0]) > 0:  # a devpts of the sandbox's own, capped; /dev/ptmx opens it
                _mount("devpts", at, "devpts", ("nosuid", "noexec"),
                       f"newinstance,ptmxmode=0666,mode=0600,max={rest[0]}")
                os.symlink("pts/ptmx", f"{os.path.dirname(at)}/ptmx")
        elif kind == "dev":
            os.makedirs(at, exist_ok=True)
            _mount("tmpfs", at, "tmpfs", ("nosuid",), "mode=0755")
            for device in _DEVICES:
                _bind(f"/dev/{device}", f"{at}/{device}", read_only=False, device=True)
            for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                                 ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
                os.symlink(target, f"{at}/{name}")
    _pivot_root(root)
    _mount(None, "/", None, ("remount", "bind", "rdonly", "nosuid", "nodev"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:  # loopback up: SIOCSIFFLAGS, IFF_UP
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14s", b"lo", 0x1 | 0x8 | 0x40, b""))
    socket.sethostname("sandbox")
    os.chdir(spec["home"])
    _install_seccomp(program)
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
