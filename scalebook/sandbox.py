"""Run one untrusted program in a sandbox: its own filesystem view, no network, capped resources.

The sandbox is built by bubblewrap (`bwrap`) where it is installed, and otherwise, when run as root, by
util-linux `unshare` and `_enter` below (new mount, pid, network, ipc and uts namespaces, the same plan).

The autograder runs every submitted notebook through `run`. Inside the sandbox the program sees:

- the system (`/usr`, `/etc`, `/bin`, `/lib*`; not `/opt`), the Python installation and the virtual environment,
  all read-only;
- the `scalebook` package read-only, *without* its answer key (`scalebook/problems` is simply not there);
- nothing else of the course, wherever it lives: the checkout holding the package (its `solutions/`, `tests/`
  ...) and the folders the caller names in `hide` (the grader's course root, submissions and gradebook) are
  covered by empty folders where a system folder would expose them (a course under `/usr/local`, `/usr/src`
  or `/etc`);
- a private, size-capped, in-memory home (its working directory, holding the files it was given), /tmp
  and /dev/shm;
- one writable file of the grader's, the answer channel, at `ANSWERS` (size-capped by RLIMIT_FSIZE);
- `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom` and `/dev/tty`, working;
- no other submission, no output folder, no network (loopback only), a clean environment, its own process
  ids (it cannot see or signal the grader's processes).

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
- rlimits through `prlimit`, always: address space and task count per process, file size, no core files.
  Without a cgroup they are all there is: no CPU share, and memory is capped per process only, not for the
  whole sandbox; `describe` names what is missing;
- scratch folders: size-capped tmpfs in both backends, with an inode cap (`Limits.inodes`, tmpfs `nr_inodes`)
  wherever the grader is root: bubblewrap has no option for it, so as root its writable scratch folders are
  tmpfs mounted beforehand in a private mount namespace (`scratch_command`); bubblewrap as another user
  leaves inodes to the memory cgroup, if there is one (`describe` says).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import re
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "SandboxResult", "backend", "available", "describe", "plan", "run", "hold_lifeline",
           "kill_group", "HOME", "ANSWERS", "UIDS"]

HOME = "/home/student"
ANSWERS = "/run/scalebook/answers.jsonl"
LIFELINE = "SCALEBOOK_LIFELINE"  # names the fd that reads end-of-file when the grader is gone
_NOBODY = "65534"
# Root's sandboxes run as a random uid from this range, which no account on the machine uses. A caller may
# narrow it (a test, to know which processes are its own).
UIDS = range(1_000_000, 2_000_000)


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use: `memory` (bytes: of the whole sandbox where a cgroup applies, and of
    address space per process always), `processes` (tasks, threads included, in the whole sandbox), `cpus`
    (CPU-seconds per second for the whole sandbox, where a cgroup applies), `file_size` (bytes, the largest
    file it may write), `scratch` (bytes, the size of each of its in-memory folders: home, /tmp, /dev/shm)
    and `inodes` (files in each of them, where the backend can cap it)."""

    memory: int = 6 * 2**30
    processes: int = 512
    file_size: int = 64 * 2**20
    scratch: int = 256 * 2**20
    cpus: float = 1.0
    inodes: int = 16_384

    def __post_init__(self) -> None:
        for name in ("memory", "processes", "file_size", "scratch", "inodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.cpus, (int, float)) or isinstance(self.cpus, bool) or not 0.01 <= self.cpus <= 4096:
            raise ValueError(f"Limits.cpus must be a number of CPUs between 0.01 and 4096, got {self.cpus!r}")

    def prlimit(self) -> list[str]:
        """The `prlimit` command line that applies these limits to the program it starts."""
        return ["prlimit", f"--as={self.memory}", f"--nproc={self.processes}", f"--fsize={self.file_size}",
                "--core=0", "--"]


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


# Control groups: one per sandbox, in every hierarchy that holds the cpu, memory or pids controller.
_CAPS = {"cpu": "CPU share", "memory": "memory of the whole sandbox", "pids": "processes of the whole sandbox"}


def _cgroup_homes() -> dict[str, tuple[str, int]]:
    """{controller: (this process's cgroup folder in the hierarchy holding that controller, cgroup version)}
    for the controllers of `_CAPS` that are mounted and enabled here."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    homes: dict[str, tuple[str, int]] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields, (fstype, _, options) = left.split(), right.split()[:3]
            names = [""] if fstype == "cgroup2" else options.split(",") if fstype == "cgroup" else []
            for name in names:
                if name not in own or os.path.relpath(own[name], fields[3]).startswith(".."):
                    continue
                home = os.path.normpath(os.path.join(fields[4], os.path.relpath(own[name], fields[3])))
                if name:
                    if name in _CAPS:
                        homes.setdefault(name, (home, 1))
                    continue
                try:
                    with open(f"{home}/cgroup.controllers", encoding="utf-8") as c:
                        enabled = c.read().split()
                except OSError:
                    continue
                homes.update({c: (home, 2) for c in enabled if c in _CAPS and c not in homes})
    return homes


def _cgroup_settings(controller: str, version: int, limits: Limits) -> list[tuple[str, str, bool]]:
    """(file, value, required) that cap `controller` at `limits` in a cgroup of `version`."""
    period = 100_000
    quota = max(1000, round(limits.cpus * period))
    table = {
        ("cpu", 1): [("cpu.cfs_period_us", str(period), True), ("cpu.cfs_quota_us", str(quota), True)],
        ("cpu", 2): [("cpu.max", f"{quota} {period}", True)],
        ("memory", 1): [("memory.limit_in_bytes", str(limits.memory), True),
                        ("memory.memsw.limit_in_bytes", str(limits.memory), False)],
        ("memory", 2): [("memory.max", str(limits.memory), True), ("memory.swap.max", "0", False)],
        ("pids", 1): [("pids.max", str(limits.processes), True)],
        ("pids", 2): [("pids.max", str(limits.processes), True)],
    }
    return table[controller, version]


def _make_cgroups(limits: Limits, name: str) -> tuple[list[str], str]:
    """Create the cgroup `name` below this process's own in each hierarchy, capped at `limits`; return the
    folders a sandbox joins and what could not be capped ('' when everything was)."""
    why = "no such controller mounted here"
    try:
        homes = _cgroup_homes()
    except OSError as err:
        homes, why = {}, f"no cgroup information ({err.strerror})"
    folders: list[str] = []
    missing = {c: why for c in _CAPS if c not in homes}
    for home, version in sorted(set(homes.values())):
        controllers = [c for c, where in homes.items() if where == (home, version)]
        folder = f"{home}/{name}"
        try:
            if version == 2:  # a child gets a controller only when its parent hands it down
                with open(f"{home}/cgroup.subtree_control", "w", encoding="utf-8") as f:
                    f.write(" ".join(f"+{c}" for c in controllers))
            os.mkdir(folder)
        except OSError as err:
            missing.update(dict.fromkeys(controllers, f"cgroup v{version} {home}: {err.strerror}"))
            continue
        folders.append(folder)
        for controller in controllers:
            try:
                for file, value, required in _cgroup_settings(controller, version, limits):
                    if required or os.path.exists(f"{folder}/{file}"):
                        with open(f"{folder}/{file}", "w", encoding="utf-8") as f:
                            f.write(value)
            except OSError as err:
                missing[controller] = f"cgroup v{version} {file}: {err.strerror}"
    return folders, "; ".join(f"{_CAPS[c]} ({why})" for c, why in sorted(missing.items()))


def _remove_cgroups(folders: list[str]) -> None:
    """Kill whatever is left in each cgroup folder, then remove it."""
    for folder in folders:
        deadline = time.monotonic() + 10
        while True:
            try:
                with open(f"{folder}/cgroup.procs", encoding="utf-8") as f:
                    for pid in f.read().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.05)


_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"'


def _join(folders: list[str]) -> list[str]:
    """The command prefix that moves the program into `folders` (cgroups) before it starts anything."""
    return ["sh", "-c", _JOIN, "sh", *folders, "--"] if folders else []


@functools.lru_cache(maxsize=8)
def describe(limits: Limits = Limits()) -> str:
    """What caps a sandbox here, in words: the cgroup caps that apply, or what only the rlimits cover."""
    folders, missing = _make_cgroups(limits, f"scalebook-probe-{os.getpid()}-{secrets.token_hex(4)}")
    _remove_cgroups(folders)
    inodes = ("inodes through the memory cgroup" if backend() == "bubblewrap" and os.geteuid() != 0 else
              f"{limits.inodes} inodes per scratch folder")
    if not missing:
        return f"cgroup caps: CPU {limits.cpus:g}, memory, processes; {inodes}"
    return f"not capped here: {missing}; rlimits per process instead"


# A seccomp filter (classic BPF over struct seccomp_data) that refuses new user namespaces: unshare and clone
# with CLONE_NEWUSER get EPERM, clone3 ENOSYS (its flags sit in memory a filter cannot read; the C library
# then falls back to clone), and so does any call through another ABI (x32, i386).
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


def _package_mounts() -> list[Step]:
    """scalebook minus its answer key: the package's folder is an empty tmpfs holding read-only binds of its
    entries, all but `problems`."""
    package = _package()
    steps = _parents(package) + [("tmpfs", "0755", str(2**20), package)]
    return steps + [("ro-bind", f"{package}/{e}", f"{package}/{e}") for e in sorted(os.listdir(package))
                    if e != "problems"]


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


def plan(files: dict[str, int], answers: Path, limits: Limits, hide: tuple[str, ...] = ()) -> list[Step]:
    """The filesystem of a sandbox holding `files` ({name: readable fd}) in `HOME` and `answers` at `ANSWERS`,
    with the checkout holding the package and the folders of `hide` out of sight."""
    steps = _system_mounts() + [("proc", "/proc"), ("dev", "/dev")]
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
    prepared by `scratch_command` in place of those writable tmpfs steps."""
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
        elif kind == "file":
            args += ["--perms", "0644", "--file", *rest]
        else:
            args += [f"--{kind}", *rest]
    args += ["--chdir", HOME, "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args + ["--"] + (_drop(uid) if os.geteuid() == 0 else []) + argv


_SCRATCH = ('size=$1 inodes=$2; shift 2; while [ "$1" != -- ]; do mount -t tmpfs -o '
            '"size=$size,nr_inodes=$inodes,mode=1777,nosuid,nodev" scratch "$1" || exit 125; shift; done; shift; '
            'exec "$@"')


def scratch_command(folders: list[str], limits: Limits) -> list[str]:
    """The command prefix (root only) that mounts a tmpfs capped in size and inodes on each host folder of
    `folders`, in a private mount namespace that lives as long as the program it then runs: bubblewrap's own
    tmpfs option takes no inode cap, so its writable scratch folders are bound from these."""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", _SCRATCH, "sh", str(limits.scratch),
            str(limits.inodes), *folders, "--"]


def unshare_command(spec: Path) -> list[str]:
    """The command line that carries out the plan in `spec` (JSON) in new namespaces with util-linux `unshare`
    (root only) and `_enter`."""
    return ["unshare", "--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child=SIGKILL",
            "--propagation", "private", "--", sys.executable, "-I", "-c",
            "import sys; sys.path.insert(0, sys.argv[2]); from scalebook.sandbox import _enter; _enter(sys.argv[1])",
            str(spec), environment()["PYTHONPATH"]]


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
            (Path(tmp) / "seccomp").write_bytes(seccomp_filter())
            fds[""] = os.open(Path(tmp) / "seccomp", os.O_RDONLY)
            uid = secrets.choice(UIDS)  # its own uid, so its own task count
            if os.geteuid() == 0:
                os.chown(answers, uid, uid)
            steps = plan({n: fd for n, fd in fds.items() if n}, answers, limits, hide)
            argv = limits.prlimit() + argv
            if kind == "namespaces":
                spec = Path(tmp) / "spec.json"
                spec.write_text(json.dumps({"steps": steps, "root": str(Path(tmp) / "root"), "env": environment(env),
                                            "argv": _drop(uid) + argv, "inodes": limits.inodes,
                                            "seccomp": str(Path(tmp) / "seccomp")}))
                (Path(tmp) / "root").mkdir()
                command = unshare_command(spec)
            elif os.geteuid() == 0:
                scratch = {s[-1]: f"{tmp}/scratch-{i}" for i, s in enumerate(steps) if s[:2] == ("tmpfs", "1777")}
                for folder in scratch.values():
                    os.mkdir(folder)
                command = scratch_command(list(scratch.values()), limits) + bwrap_command(
                    steps, argv, environment(env), uid, fds[""], scratch)
            else:
                command = bwrap_command(steps, argv, environment(env), uid, fds[""])
            folders, uncapped = _make_cgroups(limits, f"scalebook-{os.getpid()}-{secrets.token_hex(6)}")
            proc = subprocess.Popen(_join(folders) + command, stdin=subprocess.DEVNULL, stdout=err,
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
        _remove_cgroups(folders)
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
    seccomp filter."""
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
    os.chdir(HOME)
    _install_seccomp(program)
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
