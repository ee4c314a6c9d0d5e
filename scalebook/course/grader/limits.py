"""What one sandboxed notebook may use: memory, processes, CPU, file sizes, scratch space, inodes, open files and
ptys, the last two sized from the host's own limits and the number of sandboxes running at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "host_limit"]

_MIN_FILES = 64  # open files per process below which a kernel cannot start; a tiny host gets this many


def host_limit(name: str) -> int | None:
    """The host's limit `name` under /proc/sys (fs/file-max, kernel/pty/max ...), or None where unreadable."""
    try:
        return int(Path("/proc/sys", name).read_text())
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use: `memory` (bytes: of the whole sandbox where a cgroup applies, and of
    address space per process always), `processes` (tasks, threads included, in the whole sandbox), `cpus`
    (CPU-seconds per second for the whole sandbox, where a cgroup applies), `file_size` (bytes, the largest
    file it may write), `scratch` (bytes, the size of each of its in-memory folders: home, /tmp, /dev/shm),
    `inodes` (files in each of them, where the backend can cap it), `files` (open files per process, at
    most: `open_files`), `ptys` (pseudo-terminals of the whole sandbox, at most: `pty_count`) and `jobs` (how
    many sandboxes run at once, sharing the host's file table and ptys)."""

    memory: int = 6 * 2**30
    processes: int = 512
    file_size: int = 64 * 2**20
    scratch: int = 256 * 2**20
    cpus: float = 1.0
    inodes: int = 16_384
    files: int = 1024
    ptys: int = 16
    jobs: int = 1

    def __post_init__(self) -> None:
        for name in ("memory", "processes", "file_size", "scratch", "inodes", "files", "jobs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.ptys, int) or isinstance(self.ptys, bool) or self.ptys < 0:
            raise ValueError(f"Limits.ptys must be a whole number of ptys, 0 or more, got {self.ptys!r}")
        if not isinstance(self.cpus, (int, float)) or isinstance(self.cpus, bool) or not 0.01 <= self.cpus <= 4096:
            raise ValueError(f"Limits.cpus must be a number of CPUs between 0.01 and 4096, got {self.cpus!r}")

    def open_files(self) -> int:
        """Open files each process may hold (RLIMIT_NOFILE): `files`, or fewer, so that the `processes` of
        all `jobs` sandboxes together hold at most half the host's file table (fs.file-max) and none more
        than fs.nr_open; never below `_MIN_FILES`."""
        table, per_process = host_limit("fs/file-max"), host_limit("fs/nr_open")
        share = table // (2 * self.jobs * self.processes) if table else self.files
        return max(_MIN_FILES, min(self.files, share, per_process or self.files))

    def pty_count(self) -> int:
        """Pseudo-terminals the sandbox may open: `ptys`, or fewer, so that all `jobs` sandboxes together
        take at most half of those the host leaves to mounts of devpts outside its first one
        (kernel.pty.max less kernel.pty.reserve, Documentation/filesystems/devpts.rst)."""
        most, reserved = host_limit("kernel/pty/max"), host_limit("kernel/pty/reserve")
        share = (most - (reserved or 0)) // (2 * self.jobs) if most else self.ptys
        return max(0, min(self.ptys, share))

    def prlimit(self) -> list[str]:
        """The `prlimit` command line that applies these limits to the program it starts."""
        return ["prlimit", f"--as={self.memory}", f"--nproc={self.processes}", f"--fsize={self.file_size}",
                f"--nofile={self.open_files()}", "--core=0", "--"]
