"""Run one untrusted program in a sandbox: its own filesystem view, no network, capped resources.

The sandbox is built by bubblewrap (`bwrap`) where it is installed, and otherwise, when run as root, by
util-linux `unshare` and `namespaces._enter` (new mount, pid, network, ipc and uts namespaces, the same plan).

The autograder runs every submitted notebook through `run`. Inside the sandbox the program sees:

- the system (`/usr`, `/etc`, `/bin`, `/lib*`; not `/opt`), the Python installation and the virtual environment,
  all read-only;
- the `scalebook` package read-only, *without* its answer key (`scalebook/course/key` is simply not there);
- nothing else of the course, wherever it lives: the checkout holding the package (its `solutions/`, `tests/`
  ...) and the folders the caller names in `hide` (the grader's course root, submissions and gradebook) are
  covered by empty folders where a system folder would expose them (a course under `/usr/local`, `/usr/src`
  or `/etc`);
- a private, size-capped, in-memory home (its working directory, holding the files it was given), /tmp
  and /dev/shm;
- one writable file of the grader's, the answer channel, at `ANSWERS` (size-capped by RLIMIT_FSIZE);
- `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom` and `/dev/tty`, working, and a few
  ptys of its own (`Limits.pty_count`, a devpts mounted with `max=`; none under bubblewrap as another user,
  whose own devpts takes no cap);
- no other submission, no output folder, no network (loopback only), a clean environment, its own process
  ids (it cannot see or signal the grader's processes), and a new, empty session keyring (it can neither
  read nor revoke the grader's keys: `namespaces.keyring_command`).

It runs as an unprivileged uid (as root: a fresh uid from `UIDS`; as anyone else: 65534 in its own user
namespace), with no capabilities and no way to regain them, and it cannot create user namespaces (a seccomp
filter in both backends refuses `unshare` and `clone` with CLONE_NEWUSER; bubblewrap as non-root also passes
`--disable-userns`). Everything it started dies with it: the sandbox's process 1 is the program itself, and
when it exits, or the grader kills it at the time limit, the kernel kills every other process in its pid
namespace.

What caps what, per backend and machine (`describe` says which applied here):

- a cgroup of its own, when this process may create one (root, or a delegated cgroup; cgroup v2, or v1
  hierarchies per controller): the CPU time of the whole sandbox (`Limits.cpus`, so many busy processes
  cannot starve a neighbour), its memory (`Limits.memory`, including what its tmpfs files, memfd files and
  kernel objects such as inodes hold) and its task count (`Limits.processes`);
- rlimits through `prlimit`, always: address space, task count and open files per process (the open files
  sized so that all the sandboxes running at once hold at most half the host's file table), file size, no
  core files.
  Without a cgroup they are all there is: no CPU share, and memory is capped per process only, not for the
  whole sandbox; `describe` names what is missing;
- scratch folders: size-capped tmpfs in both backends, with an inode cap (`Limits.inodes`, tmpfs `nr_inodes`)
  wherever the grader is root: bubblewrap has no option for it, so as root its writable scratch folders are
  tmpfs mounted beforehand in a private mount namespace (`scratch_command`); bubblewrap as another user
  leaves inodes to the memory cgroup, if there is one (`describe` says).
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

from . import cgroups, namespaces
from .limits import Limits

__all__ = ["SandboxResult", "backend", "available", "describe", "mounts", "run", "hold_lifeline",
           "kill_group", "HOME", "ANSWERS", "UIDS"]

HOME = "/home/student"
ANSWERS = "/run/scalebook/answers.jsonl"
LIFELINE = "SCALEBOOK_LIFELINE"  # names the fd that reads end-of-file when the grader is gone
_NOBODY = "65534"
# Root's sandboxes run as a random uid from this range, which no account on the machine uses. A caller may
# narrow it (a test, to know which processes are its own).
UIDS = range(1_000_000, 2_000_000)
DEFAULTS = Limits()  # what a sandbox may use unless the caller says otherwise


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed run ended: its exit code (None when killed at the time limit), the tail of its output,
    and what could not be capped for it (empty when a cgroup capped CPU, memory and processes)."""

    returncode: int | None
    output: str
    uncapped: str = ""

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


@functools.lru_cache(maxsize=8)
def describe(limits: Limits = DEFAULTS) -> str:
    """What caps a sandbox here, in words: the cgroup caps that apply, or what only the rlimits cover."""
    folders, missing = cgroups.create(f"scalebook-probe-{os.getpid()}-{secrets.token_hex(4)}", limits.memory,
                                      limits.processes, limits.cpus)
    cgroups.remove(folders)
    capped_here = backend() != "bubblewrap" or os.geteuid() == 0
    inodes = f"{limits.inodes} inodes per scratch folder" if capped_here else "inodes through the memory cgroup"
    files = f"{limits.open_files()} open files per process, {limits.pty_count() if capped_here else 0} ptys"
    if not missing:
        return f"cgroup caps: CPU {limits.cpus:g}, memory, processes; {inodes}; {files}"
    return f"not capped here: {missing}; rlimits per process instead; {files}"


# A sandbox's filesystem is a plan of steps, built on an empty root in order, each (kind, *arguments, target);
# each backend carries it out.
Step = tuple[str, ...]


def _system_mounts() -> list[Step]:
    """Read-only binds of the system directories; merged-/usr symlinks (/lib -> usr/lib) kept as symlinks."""
    steps: list[Step] = []
    for top in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            steps.append(("symlink", os.readlink(top), top))
        elif os.path.isdir(top):
            steps.append(("ro-bind", top, top))
    return steps


def _parents(path: str) -> list[Step]:
    """Create the directories above `path` world-searchable (bwrap would make them 0700 like the host's /root)."""
    return [("dir", str(parent)) for parent in reversed(Path(path).parents[:-1])]


def _package() -> str:
    import scalebook

    return str(Path(scalebook.__file__).resolve().parent)


def _python_roots() -> list[str]:
    """The interpreter's installation and the virtual environment, outside the system folders."""
    roots = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)}
    return sorted(r for r in roots if not r.startswith(("/usr/", "/etc/")) and r != "/usr")


def _python_mounts() -> list[Step]:
    """Read-only binds of the interpreter's installation and the virtual environment."""
    return [step for root in _python_roots() for step in _parents(root) + [("ro-bind", root, root)]]


KEY = ("course", "key")  # the answer key's folder inside the package, which the sandbox leaves out


def _package_mounts() -> list[Step]:
    """scalebook minus its answer key: the package's folder, and the folder holding the key, are empty tmpfs
    mounts holding read-only binds of their entries, all but the key's (`course/key`)."""
    package = _package()
    steps = _parents(package)
    folder = package
    for skip in KEY:
        steps.append(("tmpfs", "0755", str(2**20), folder))
        steps += [("ro-bind", f"{folder}/{e}", f"{folder}/{e}") for e in sorted(os.listdir(folder)) if e != skip]
        folder = f"{folder}/{skip}"
    return steps


def _under(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _masks(steps: list[Step], hide: list[str]) -> list[Step]:
    """Cover each folder of `hide` that a bind in `steps` exposes with an empty one (a file with /dev/null,
    unreadable there); a folder holding the interpreter's installation is covered entry by entry around it."""
    bound = [s[-1] for s in steps if s[0] in ("ro-bind", "bind")]
    needed = _python_roots()
    masks: list[Step] = []
    todo = sorted({os.path.realpath(p) for p in hide if _under(os.path.realpath(p), bound)})
    while todo:
        path = todo.pop()
        if path in needed or not os.path.lexists(path):
            continue
        if any(_under(n, [path]) for n in needed):
            todo += [f"{path}/{e}" for e in os.listdir(path)]
        elif os.path.isdir(path) and not os.path.islink(path):
            masks.append(("tmpfs", "0755", "4096", path))
        elif not os.path.islink(path):
            masks.append(("ro-bind", "/dev/null", path))
    return masks


def mounts(files: dict[str, int], answers: Path, limits: Limits, hide: tuple[str, ...] = ()) -> list[Step]:
    """The filesystem of a sandbox holding `files` ({name: readable fd}) in `HOME` and `answers` at `ANSWERS`,
    with the checkout holding the package and the folders of `hide` out of sight."""
    steps = _system_mounts() + [("proc", "/proc"), ("dev", "/dev"), ("devpts", str(limits.pty_count()), "/dev/pts")]
    steps += _parents(HOME) + [("tmpfs", "1777", str(limits.scratch), path) for path in ("/tmp", "/dev/shm", HOME)]
    steps += _python_mounts()  # after the private /tmp, so a package or venv kept under /tmp stays visible
    checkout = str(Path(_package()).parent)
    steps += _masks(steps, [*hide, *([] if _under(checkout, _python_roots()) else [checkout])])
    steps += _package_mounts()  # last: over a mask of the checkout that holds it
    steps += [("file", str(fd), f"{HOME}/{name}") for name, fd in files.items()]
    return steps + _parents(ANSWERS) + [("bind", str(answers), ANSWERS), ("remount-ro", "/")]


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandboxed program: a few fixed variables, and `env`."""
    return {"HOME": HOME, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
            "PYTHONPATH": str(Path(_package()).parent),  # this scalebook, wherever it is
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


def bwrap_command(steps: list[Step], argv: list[str], env: dict[str, str], uid: int, seccomp: int,
                  scratch: dict[str, str] | None = None) -> list[str]:
    """The bwrap command line that carries out `steps` and runs `argv` in `HOME` as `uid` (when root; as
    anyone else, a user namespace maps its uid 65534 onto the caller, and the task count is per namespace),
    under the seccomp filter read from fd `seccomp`. `scratch` ({sandbox path: host folder}) binds folders
    prepared by `scratch_command` in place of those writable tmpfs steps and of the capped devpts; without
    one there, /dev/pts is an empty folder (bubblewrap's own devpts takes no cap), so there are no ptys."""
    scratch = scratch or {}
    args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--as-pid-1", "--die-with-parent", "--new-session", "--hostname", "sandbox", "--seccomp", str(seccomp)]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", _NOBODY, "--gid", _NOBODY, "--disable-userns", "--cap-drop", "ALL"]
    for kind, *rest in steps:
        if kind == "dir":
            args += ["--perms", "0755", "--dir", rest[0]]
        elif kind == "tmpfs" and rest[2] in scratch:
            args += ["--bind", scratch[rest[2]], rest[2]]
        elif kind == "tmpfs":
            args += ["--perms", rest[0], "--size", rest[1], "--tmpfs", rest[2]]
        elif kind == "devpts":
            args += ["--dev-bind", scratch[rest[1]], rest[1]] if rest[1] in scratch else ["--tmpfs", rest[1]]
        elif kind == "file":
            args += ["--perms", "0644", "--file", *rest]
        else:
            args += [f"--{kind}", *rest]
    args += ["--chdir", HOME, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--"] + (_drop(uid) if os.geteuid() == 0 else []) + argv


_SCRATCH = ('while [ "$1" != -- ]; do mount -t "$1" -o "$2" scratch "$3" || exit 125; shift 3; done; shift; '
            'exec "$@"')


def scratch_mounts(steps: list[Step], limits: Limits, tmp: str) -> dict[str, tuple[str, str, str]]:
    """{sandbox path: (file system, options, host folder under `tmp`)} of what `scratch_command` mounts
    beforehand for bubblewrap as root, which has no option for these caps: each writable tmpfs of `steps`
    capped in size and inodes, and a devpts capped at `Limits.pty_count` ptys (none when that is 0)."""
    mounts = {}
    for i, step in enumerate(steps):
        if step[:2] == ("tmpfs", "1777"):
            options = f"size={limits.scratch},nr_inodes={limits.inodes},mode=1777,nosuid,nodev"
            mounts[step[-1]] = ("tmpfs", options, f"{tmp}/scratch-{i}")
        elif step[0] == "devpts" and int(step[1]) > 0:
            mounts[step[-1]] = ("devpts", f"newinstance,ptmxmode=0666,mode=0600,max={step[1]},nosuid,noexec",
                                f"{tmp}/pts")
    return mounts


def scratch_command(mounts: dict[str, tuple[str, str, str]]) -> list[str]:
    """The command prefix (root only) that makes each of `mounts` (`scratch_mounts`) on its host folder, in a
    private mount namespace that lives as long as the program it then runs (bubblewrap binds them in)."""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _SCRATCH, "sh",
            *[part for mount in mounts.values() for part in mount], "--"]


def _open_copies(files: dict[str, bytes], folder: Path) -> dict[str, int]:
    """Write each of `files` ({name: content}) into `folder` and open it for reading: {name: fd}."""
    fds = {}
    for i, (name, content) in enumerate(files.items()):
        path = folder / f"file-{i}"
        path.write_bytes(content)
        fds[name] = os.open(path, os.O_RDONLY)
    return fds


def run(argv: list[str], files: dict[str, bytes], answers: Path, limits: Limits, timeout: float,
        env: dict[str, str] | None = None, kind: str | None = None, hide: tuple[str, ...] = ()) -> SandboxResult:
    """Run `argv` in a fresh sandbox whose home holds `files` ({name: content}); kill its whole process tree
    after `timeout` seconds. `answers` is the host file it sees, writable, at `ANSWERS`; `env` adds variables
    to its clean environment; `kind` is the backend (default `backend()`); `hide` names host folders it must
    not see even where a system folder holds them."""
    kind = kind or backend()
    # The sandbox holds the read end of a pipe whose write end only this process holds: if the grader dies,
    # the pipe reads end-of-file and a program that calls `hold_lifeline` exits, taking its pid namespace.
    lifeline, keep = os.pipe()
    env = {**(env or {}), LIFELINE: str(lifeline)}
    fds: dict[str, int] = {}
    folders: list[str] = []
    try:
        with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory(prefix="scalebook-sandbox-") as tmp:
            fds = _open_copies(files, Path(tmp))
            (Path(tmp) / "seccomp").write_bytes(namespaces.seccomp_filter())
            fds[""] = os.open(Path(tmp) / "seccomp", os.O_RDONLY)
            uid = secrets.choice(UIDS)  # its own uid, so its own task count
            if os.geteuid() == 0:
                os.chown(answers, uid, uid)
            steps = mounts({n: fd for n, fd in fds.items() if n}, answers, limits, hide)
            argv = limits.prlimit() + argv
            if kind == "namespaces":
                spec = Path(tmp) / "spec.json"
                spec.write_text(json.dumps({"steps": steps, "root": str(Path(tmp) / "root"), "env": environment(env),
                                            "argv": _drop(uid) + argv, "inodes": limits.inodes, "home": HOME,
                                            "seccomp": str(Path(tmp) / "seccomp")}))
                (Path(tmp) / "root").mkdir()
                command = namespaces.unshare_command(spec, environment()["PYTHONPATH"])
            elif os.geteuid() == 0:
                scratch = scratch_mounts(steps, limits, tmp)
                for _, _, folder in scratch.values():
                    os.mkdir(folder)
                command = scratch_command(scratch) + bwrap_command(
                    steps, argv, environment(env), uid, fds[""], {path: m[2] for path, m in scratch.items()})
            else:
                command = bwrap_command(steps, argv, environment(env), uid, fds[""])
            folders, uncapped = cgroups.create(f"scalebook-{os.getpid()}-{secrets.token_hex(6)}", limits.memory,
                                              limits.processes, limits.cpus)
            command = cgroups.join(folders) + namespaces.keyring_command() + command
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err,
                                    stderr=subprocess.STDOUT, pass_fds=(*fds.values(), lifeline),
                                    start_new_session=True)
            try:
                returncode: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:
                _kill_sandbox(proc)
            err.seek(max(0, err.seek(0, os.SEEK_END) - 4096))
            return SandboxResult(returncode, err.read().decode("utf-8", "replace"), uncapped)
    finally:
        cgroups.remove(folders)
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


