"""Run one untrusted program in a sandbox: its own filesystem view, no network, capped resources.

The sandbox is built by bubblewrap (`bwrap`) where it is installed, and otherwise, when run as root, by
util-linux `unshare` and `_enter` below (new mount, pid, network, ipc and uts namespaces, the same plan).

The autograder runs every submitted notebook through `run`. Inside the sandbox the program sees:

- the system (`/usr`, `/etc`), the Python installation and the virtual environment, all read-only;
- the `scalebook` package read-only, *without* its answer key (`scalebook/problems` is simply not there);
- a private, size-capped, in-memory home (its working directory, holding the files it was given), /tmp
  and /dev/shm;
- one writable file of the grader's, the answer channel, at `ANSWERS` (size-capped by RLIMIT_FSIZE);
- nothing else: no other submission, no `solutions/`, no output folder, no network (loopback only),
  a clean environment, its own process ids (it cannot see or signal the grader's processes).

It runs as an unprivileged uid (as root: a fresh uid of its own; as anyone else: 65534 in its own user
namespace), with no capabilities and no way to regain them; its address space (memory cap), task count
(process cap, per sandbox since its uid or user namespace is its own) and file sizes are limited with
rlimits. Everything it started dies with it: the sandbox's process 1 is the program itself, and when it
exits, or the grader kills it at the time limit, the kernel kills every other process in its pid namespace.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "SandboxResult", "backend", "available", "plan", "run", "hold_lifeline", "kill_group",
           "HOME", "ANSWERS"]

HOME = "/home/student"
ANSWERS = "/run/scalebook/answers.jsonl"
LIFELINE = "SCALEBOOK_LIFELINE"  # names the fd that reads end-of-file when the grader is gone
_NOBODY = "65534"
# Root's sandboxes run as a random uid from this range, which no account on the machine uses.
_FIRST_UID, _UIDS = 1_000_000, 1_000_000


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use: `memory` (bytes of address space per process), `processes` (tasks,
    threads included, in the whole sandbox), `file_size` (bytes, the largest file it may write) and
    `scratch` (bytes, the size of each of its in-memory folders: home, /tmp, /dev/shm)."""

    memory: int = 6 * 2**30
    processes: int = 512
    file_size: int = 64 * 2**20
    scratch: int = 256 * 2**20

    def __post_init__(self) -> None:
        for name in ("memory", "processes", "file_size", "scratch"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")

    def prlimit(self) -> list[str]:
        """The `prlimit` command line that applies these limits to the program it starts."""
        return ["prlimit", f"--as={self.memory}", f"--nproc={self.processes}", f"--fsize={self.file_size}",
                "--core=0", "--"]


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed run ended: its exit code (None when killed at the time limit) and the tail of its output."""

    returncode: int | None
    output: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def backend() -> str | None:
    """The sandbox this machine offers: 'bubblewrap', 'namespaces' (root with util-linux `unshare` but no
    bwrap), or None."""
    if shutil.which("bwrap"):
        return "bubblewrap"
    if os.geteuid() == 0 and shutil.which("unshare"):
        return "namespaces"
    return None


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """Return None when sandboxes work on this machine, else why not (nothing to build one with, or it
    failed to start)."""
    kind = backend()
    if kind is None:
        return "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` (make test installs it)"
    for tool in ("prlimit", "setpriv") if os.geteuid() == 0 else ("prlimit",):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    with tempfile.NamedTemporaryFile() as answers:
        probe = run([sys.executable, "-c", "import scalebook"], {}, Path(answers.name), Limits(), timeout=60,
                    kind=kind)
    if probe.returncode != 0:
        return f"{kind} could not start a sandbox here: {probe.output.strip()[-400:] or probe.returncode}"
    return None


# A sandbox's filesystem is a plan of steps, built on an empty root in order, each (kind, *arguments, target);
# each backend carries it out.
Step = tuple[str, ...]


def _system_mounts() -> list[Step]:
    """Read-only binds of the system directories; merged-/usr symlinks (/lib -> usr/lib) kept as symlinks."""
    steps: list[Step] = []
    for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"):
        if os.path.islink(top):
            steps.append(("symlink", os.readlink(top), top))
        elif os.path.isdir(top):
            steps.append(("ro-bind", top, top))
    return steps


def _parents(path: str) -> list[Step]:
    """Create the directories above `path` world-searchable (bwrap would make them 0700 like the host's /root)."""
    return [("dir", str(parent)) for parent in reversed(Path(path).parents[:-1])]


def _python_mounts() -> list[Step]:
    """Read-only binds of the interpreter, the virtual environment and scalebook minus its answer key."""
    import scalebook

    package = Path(scalebook.__file__).resolve().parent
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    steps: list[Step] = []
    for root in sorted(roots):
        if not root.startswith(("/usr/", "/etc/")) and root != "/usr":
            steps += _parents(root) + [("ro-bind", root, root)]
    # The package is bound entry by entry, leaving out the key; a package inside the venv is hidden by an
    # empty unreadable directory over it instead.
    if any(str(package).startswith(root + os.sep) for root in roots):
        return steps + [("tmpfs", "0000", "4096", str(package / "problems"))]
    steps += _parents(str(package)) + [("dir", str(package))]
    return steps + [("ro-bind", str(package / e), str(package / e)) for e in sorted(os.listdir(package))
                    if e != "problems"]


def plan(files: dict[str, int], answers: Path, limits: Limits) -> list[Step]:
    """The filesystem of a sandbox holding `files` ({name: readable fd}) in `HOME` and `answers` at `ANSWERS`."""
    steps = _system_mounts() + [("proc", "/proc"), ("dev", "/dev")]
    steps += [("tmpfs", "1777", str(limits.scratch), path) for path in ("/tmp", "/dev/shm", HOME)]
    steps += _python_mounts()  # after the private /tmp, so a package or venv kept under /tmp stays visible
    steps += [("file", str(fd), f"{HOME}/{name}") for name, fd in files.items()]
    return steps + _parents(ANSWERS) + [("bind", str(answers), ANSWERS), ("remount-ro", "/")]


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed program: a few fixed variables, and `env`."""
    import scalebook

    return {"HOME": HOME, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
            "PYTHONPATH": str(Path(scalebook.__file__).resolve().parents[1]),  # this scalebook, wherever it is
            "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "JAX_PLATFORMS": "cpu", "MPLBACKEND": "Agg", **(env or {})}


def _drop(uid: int) -> list[str]:
    """The command prefix that turns root into `uid`, without capabilities or a way to regain them.

    Root's sandbox runs as a fresh uid: the kernel never enforces RLIMIT_NPROC on root (nor on a user
    namespace's user mapped onto root), and a uid of its own gives the sandbox a task count of its own.
    A change of uid clears the parent-death signal, so it is set again.
    """
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--pdeathsig=SIGKILL", "--"]


def bwrap_command(steps: list[Step], argv: list[str], env: dict[str, str], uid: int) -> list[str]:
    """The bwrap command line that carries out `steps` and runs `argv` in `HOME` as `uid` (when root; as
    anyone else, a user namespace maps its uid 65534 onto the caller, and the task count is per namespace)."""
    args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--as-pid-1", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", _NOBODY, "--gid", _NOBODY, "--disable-userns", "--cap-drop", "ALL"]
    for kind, *rest in steps:
        if kind == "dir":
            args += ["--perms", "0755", "--dir", rest[0]]
        elif kind == "tmpfs":
            args += ["--perms", rest[0], "--size", rest[1], "--tmpfs", rest[2]]
        elif kind == "file":
            args += ["--perms", "0644", "--file", *rest]
        else:
            args += [f"--{kind}", *rest]
    args += ["--chdir", HOME, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--"] + (_drop(uid) if os.geteuid() == 0 else []) + argv


def unshare_command(spec: Path) -> list[str]:
    """The command line that carries out the plan in `spec` (JSON) in new namespaces with util-linux `unshare`
    (root only) and `_enter`."""
    return ["unshare", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child=SIGKILL",
            "--propagation", "private", "--", sys.executable, "-I", "-c",
            "import sys; sys.path.insert(0, sys.argv[2]); from scalebook.sandbox import _enter; _enter(sys.argv[1])",
            str(spec), environment()["PYTHONPATH"]]


def run(argv: list[str], files: dict[str, Path], answers: Path, limits: Limits, timeout: float,
        env: dict[str, str] | None = None, kind: str | None = None) -> SandboxResult:
    """Run `argv` in a fresh sandbox whose home holds copies of `files` ({name: host path}, symlinks refused);
    kill its whole process tree after `timeout` seconds. `answers` is the host file it sees, writable, at
    `ANSWERS`; `env` adds variables to its clean environment; `kind` is the backend (default `backend()`)."""
    kind = kind or backend()
    fds: dict[str, int] = {}
    # The sandbox holds the read end of a pipe whose write end only this process holds: if the grader dies,
    # the pipe reads end-of-file and a program that calls `hold_lifeline` exits, taking its pid namespace.
    lifeline, keep = os.pipe()
    env = {**(env or {}), LIFELINE: str(lifeline)}
    try:
        for name, path in files.items():
            fds[name] = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory(prefix="scalebook-sandbox-") as tmp:
            uid = _FIRST_UID + secrets.randbelow(_UIDS)  # its own uid, so its own task count
            if os.geteuid() == 0:
                os.chown(answers, uid, uid)
            steps = plan(fds, answers, limits)
            argv = limits.prlimit() + argv
            if kind == "namespaces":
                spec = Path(tmp) / "spec.json"
                spec.write_text(json.dumps({"steps": steps, "root": str(Path(tmp) / "root"), "env": environment(env),
                                            "argv": _drop(uid) + argv}))
                (Path(tmp) / "root").mkdir()
                command = unshare_command(spec)
            else:
                command = bwrap_command(steps, argv, environment(env), uid)
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                                    pass_fds=(*fds.values(), lifeline), start_new_session=True)
            try:
                returncode: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:
                _kill_sandbox(proc)
            err.seek(max(0, err.seek(0, os.SEEK_END) - 4096))
            return SandboxResult(returncode, err.read().decode("utf-8", "replace"))
    finally:
        for fd in (*fds.values(), lifeline, keep):
            os.close(fd)


def _parent_of(pid: int) -> int | None:
    try:
        return int(re.search(r"^PPid:\s*(\d+)$", Path(f"/proc/{pid}/status").read_text(), re.M)[1])
    except (OSError, TypeError):
        return None


def _kill_sandbox(proc: subprocess.Popen) -> None:
    """SIGKILL the sandbox's pid 1 (the launcher's child), which takes every process of its pid namespace
    with it, then the launcher. The parent-death signal cannot be trusted for this (bwrap's is cleared by
    the change of uid), so pid 1 is found by its parent and killed through a pidfd taken while its parent is
    still the launcher: no other process can be hit by a reused pid."""
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        if _parent_of(pid) != proc.pid:
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if _parent_of(pid) == proc.pid:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        finally:
            os.close(pidfd)
    kill_group(proc)


def hold_lifeline() -> None:
    """In a sandboxed program (its pid 1): exit as soon as the grader that started it is gone, which ends
    the sandbox (the parent-death signal cannot do it: bwrap's is lost with the change of uid)."""
    import threading

    fd = int(os.environ.pop(LIFELINE, "-1"))
    if fd < 0:
        return

    def watch() -> None:
        while os.read(fd, 1):
            pass
        os._exit(4)

    threading.Thread(target=watch, daemon=True).start()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started in its own session, and its process group; wait for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


_MS = {"rdonly": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "remount": 32, "bind": 4096, "rec": 16384}
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def _mount(source: str | None, target: str, fstype: str | None, flags: tuple[str, ...], data: str = "") -> None:
    """mount(2), through libc (the standard library has no binding)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    bits = sum(_MS[f] for f in flags)
    if libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), bits,
                  data.encode() or None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _bind(source: str, target: str, read_only: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, ("bind", "rec"))
    _mount(None, target, None, ("remount", "bind", "nosuid", "nodev") + (("rdonly",) if read_only else ()))


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # syscall numbers (glibc has no wrapper)


def _pivot_root(root: str) -> None:
    """Make `root` the root of this mount namespace and detach the old one: unlike chroot, nothing is left
    to climb back to, even for a process that gains CAP_SYS_CHROOT in a user namespace of its own."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    os.chdir(root)
    os.mkdir(".old")
    if libc.syscall(_PIVOT_ROOT[os.uname().machine], b".", b".old") != 0:
        raise OSError(ctypes.get_errno(), "pivot_root")
    os.chdir("/")
    if libc.umount2(b"/.old", 2) != 0:  # MNT_DETACH
        raise OSError(ctypes.get_errno(), "umount /.old")
    os.rmdir("/.old")


def _enter(spec_path: str) -> None:
    """pid 1 of an `unshare` sandbox, root in new mount, pid, net, ipc and uts namespaces: build the plan's
    filesystem on a tmpfs, pivot into it, bring up loopback, and exec the program as its own uid."""
    import fcntl
    import socket
    import struct

    spec = json.loads(Path(spec_path).read_text())
    root = spec["root"]
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
            _mount("tmpfs", at, "tmpfs", ("nosuid", "nodev"), f"mode={rest[0]},size={rest[1]}")
        elif kind == "file":
            with os.fdopen(int(rest[0]), "rb") as src, open(at, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(at, 0o644)
        elif kind == "proc":
            os.makedirs(at, exist_ok=True)
            _mount("proc", at, "proc", ("nosuid", "nodev", "noexec"))
        elif kind == "dev":
            os.makedirs(at, exist_ok=True)
            _mount("tmpfs", at, "tmpfs", ("nosuid",), "mode=0755")
            for device in _DEVICES:
                _bind(f"/dev/{device}", f"{at}/{device}", read_only=False)
            for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                                 ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
                os.symlink(target, f"{at}/{name}")
    _pivot_root(root)
    _mount(None, "/", None, ("remount", "bind", "rdonly", "nosuid", "nodev"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:  # loopback up: SIOCSIFFLAGS, IFF_UP
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14s", b"lo", 0x1 | 0x8 | 0x40, b""))
    socket.sethostname("sandbox")
    os.chdir(HOME)
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
