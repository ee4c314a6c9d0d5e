"""Run one untrusted program in a bubblewrap sandbox: its own filesystem view, no network, capped resources.

The autograder runs every submitted notebook through `run`. Inside the sandbox the program sees:

- the system (`/usr`, `/etc`), the Python installation and the virtual environment, all read-only;
- the `scalebook` package read-only, *without* its answer key (`scalebook/problems` is simply not there);
- a private, size-capped, in-memory home (its working directory, holding the files it was given), /tmp
  and /dev/shm;
- one writable file of the grader's, the answer channel, at `ANSWERS` (size-capped by RLIMIT_FSIZE);
- nothing else: no other submission, no `solutions/`, no output folder, no network (loopback only),
  a clean environment, its own process ids (it cannot see or signal the grader's processes).

It runs as uid 65534 in its own user namespace, with no capabilities and no way to create further
namespaces; its address space (memory cap), task count (process cap, per sandbox since the user
namespace is its own) and file sizes are limited with rlimits. Everything it started dies with it: the
sandbox's process 1 is the program itself, and when it exits, or the grader kills it at the time limit,
the kernel kills every other process in its pid namespace.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "SandboxResult", "available", "run", "kill_group", "HOME", "ANSWERS"]

HOME = "/home/student"
ANSWERS = "/run/scalebook/answers.jsonl"
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


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """Return None when sandboxes work on this machine, else why not (bwrap missing, or it failed to start)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` (make test installs it)"
    for tool in ("prlimit", "setpriv") if os.geteuid() == 0 else ("prlimit",):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    with tempfile.NamedTemporaryFile() as answers:
        probe = run([sys.executable, "-c", "import scalebook"], {}, Path(answers.name), Limits(), timeout=60)
    if probe.returncode != 0:
        return f"bwrap could not start a sandbox here: {probe.output.strip()[-400:] or probe.returncode}"
    return None


def _system_mounts() -> list[str]:
    """Read-only binds of the system directories; merged-/usr symlinks (/lib -> usr/lib) kept as symlinks."""
    args: list[str] = []
    for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _parents(path: str) -> list[str]:
    """Create the directories above `path` world-searchable (bwrap would make them 0700 like the host's /root)."""
    args: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _python_mounts() -> list[str]:
    """Read-only binds of the interpreter, the virtual environment and scalebook minus its answer key."""
    import scalebook

    package = Path(scalebook.__file__).resolve().parent
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    args: list[str] = []
    for root in sorted(roots):
        if not root.startswith(("/usr/", "/etc/")) and root != "/usr":
            args += _parents(root) + ["--ro-bind", root, root]
    # The package is bound entry by entry, leaving out the key; a package inside the venv is hidden by an
    # empty unreadable directory over it instead.
    inside_venv = any(str(package).startswith(root + os.sep) for root in roots)
    if inside_venv:
        return args + ["--perms", "0000", "--tmpfs", str(package / "problems")]
    args += _parents(str(package)) + ["--perms", "0755", "--dir", str(package)]
    for entry in sorted(os.listdir(package)):
        if entry != "problems":
            args += ["--ro-bind", str(package / entry), str(package / entry)]
    return args


def _identity(uid: int) -> tuple[list[str], list[str]]:
    """The bwrap options and the command prefix that make the sandboxed program an unprivileged user.

    Run by root, bwrap would map the sandbox's user onto root, and the kernel never enforces RLIMIT_NPROC on
    root: so root's sandbox starts as root without a user namespace and `setpriv` drops to `uid` (no
    capabilities, no new privileges) before anything untrusted runs. Run by anyone else, the user namespace
    does it: the sandbox's uid 65534 maps onto the caller, and the task count is kept per namespace.
    """
    if os.geteuid() == 0:
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs",
                "--pdeathsig=SIGKILL", "--"]  # a change of uid clears bwrap's --die-with-parent: set it again
        return [], drop
    return ["--unshare-user", "--uid", _NOBODY, "--gid", _NOBODY, "--disable-userns", "--cap-drop", "ALL"], []


def command(argv: list[str], files: dict[str, int], answers: Path, limits: Limits, uid: int,
            env: dict[str, str] | None = None) -> list[str]:
    """The bwrap command line that runs `argv` as `uid` in `HOME` holding `files` ({name: readable fd}), with
    only a few fixed variables and `env` in its environment."""
    namespaces, drop = _identity(uid)
    args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            *namespaces, "--as-pid-1", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    args += _system_mounts() + ["--proc", "/proc", "--dev", "/dev"]
    for path in ("/tmp", "/dev/shm", HOME):
        args += ["--perms", "1777", "--size", str(limits.scratch), "--tmpfs", path]
    args += _python_mounts()  # after the private /tmp, so a package or venv kept under /tmp stays visible
    for name, fd in files.items():
        args += ["--perms", "0644", "--file", str(fd), f"{HOME}/{name}"]
    args += _parents(ANSWERS) + ["--bind", str(answers), ANSWERS, "--remount-ro", "/", "--chdir", HOME, "--clearenv"]
    import scalebook

    env = {"HOME": HOME, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONPATH": str(Path(scalebook.__file__).resolve().parents[1]),  # this scalebook, wherever it is
           "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "JAX_PLATFORMS": "cpu", "MPLBACKEND": "Agg", **(env or {})}
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--"] + drop + limits.prlimit() + argv


def run(argv: list[str], files: dict[str, Path], answers: Path, limits: Limits, timeout: float,
        env: dict[str, str] | None = None) -> SandboxResult:
    """Run `argv` in a fresh sandbox whose home holds copies of `files` ({name: host path}, symlinks refused);
    kill its whole process tree after `timeout` seconds. `answers` is the host file it sees, writable, at
    `ANSWERS`; `env` adds variables to its clean environment."""
    fds: dict[str, int] = {}
    info, info_out = os.pipe()  # bwrap writes {"child-pid": N} there: the sandbox's pid 1, seen from here
    try:
        for name, path in files.items():
            fds[name] = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with tempfile.TemporaryFile() as err:
            uid = _FIRST_UID + secrets.randbelow(_UIDS)  # its own uid, so its own task count
            if os.geteuid() == 0:
                os.chown(answers, uid, uid)
            proc = subprocess.Popen(["bwrap", "--info-fd", str(info_out), *command(argv, fds, answers, limits, uid,
                                                                                    env)[1:]],
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT,
                                    pass_fds=(*fds.values(), info_out), start_new_session=True)
            os.close(info_out)
            info_out = -1
            try:
                returncode: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:
                _kill_sandbox(proc, info)
            err.seek(max(0, err.seek(0, os.SEEK_END) - 4096))
            return SandboxResult(returncode, err.read().decode("utf-8", "replace"))
    finally:
        for fd in (*fds.values(), info, info_out):
            if fd >= 0:
                os.close(fd)


def _kill_sandbox(proc: subprocess.Popen, info: int) -> None:
    """SIGKILL the sandbox's pid 1, which takes every process of its pid namespace with it, then bwrap.

    bwrap's --die-with-parent does not survive the change of uid, so pid 1 is killed by its pid (read
    from bwrap's info pipe), through a pidfd taken while its parent is still bwrap: no other process can
    be hit by a reused pid.
    """
    ready, _, _ = select.select([info], [], [], 5)
    text = os.read(info, 4096) if ready else b""
    match = re.search(rb'"child-pid"\s*:\s*(\d+)', text)
    if match:
        try:
            pidfd = os.pidfd_open(int(match[1]))
        except ProcessLookupError:
            pidfd = -1
        if pidfd >= 0:
            try:
                status = Path(f"/proc/{int(match[1])}/status").read_text()
                if re.search(rf"^PPid:\s*{proc.pid}$", status, re.M):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(pidfd)
    kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started in its own session, and its process group; wait for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
