"""Control groups for the grader's sandboxes: one per sandbox, capping the CPU time, the memory and the task
count of everything it runs together, where this process may create cgroups.

A cgroup is made in every hierarchy that holds the cpu, memory or pids controller, below this process's own
cgroup: cgroup v2 (the unified hierarchy; the parent must be able to hand the controllers down, as the root
cgroup or a delegated one can) or cgroup v1 (one hierarchy per controller), side by side on hybrid systems.
Where none can be made (not root, no delegation), `create` says which caps are missing and why, and the
sandbox falls back on rlimits (see `sandbox.py`). A systemd scope is not used.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["CAPS", "homes", "create", "remove", "join"]

CAPS = {"cpu": "CPU share", "memory": "memory of the whole sandbox", "pids": "processes of the whole sandbox"}


def homes() -> dict[str, tuple[str, int]]:
    """{controller: (this process's cgroup folder in the hierarchy holding that controller, cgroup version)}
    for the controllers of `CAPS` that are mounted and enabled here."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    found: dict[str, tuple[str, int]] = {}
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
                    if name in CAPS:
                        found.setdefault(name, (home, 1))
                    continue
                try:
                    with open(f"{home}/cgroup.controllers", encoding="utf-8") as c:
                        enabled = c.read().split()
                except OSError:
                    continue
                found.update({c: (home, 2) for c in enabled if c in CAPS and c not in found})
    return found


def _settings(controller: str, version: int, memory: int, processes: int, cpus: float) -> list[tuple[str, str, bool]]:
    """(file, value, required) that cap `controller` in a cgroup of `version` at `memory` bytes, `processes`
    tasks or `cpus` CPU-seconds per second."""
    period = 100_000
    quota = max(1000, round(cpus * period))
    table = {
        ("cpu", 1): [("cpu.cfs_period_us", str(period), True), ("cpu.cfs_quota_us", str(quota), True)],
        ("cpu", 2): [("cpu.max", f"{quota} {period}", True)],
        ("memory", 1): [("memory.limit_in_bytes", str(memory), True),
                        ("memory.memsw.limit_in_bytes", str(memory), False)],
        ("memory", 2): [("memory.max", str(memory), True), ("memory.swap.max", "0", False)],
        ("pids", 1): [("pids.max", str(processes), True)],
        ("pids", 2): [("pids.max", str(processes), True)],
    }
    return table[controller, version]


def create(name: str, memory: int, processes: int, cpus: float) -> tuple[list[str], str]:
    """Create the cgroup `name` below this process's own in each hierarchy, capped at `memory` bytes,
    `processes` tasks and `cpus` CPU-seconds per second; return the folders a program joins (`join`) and
    what could not be capped, in words ('' when everything was)."""
    why = "no such controller mounted here"
    try:
        found = homes()
    except OSError as err:
        found, why = {}, f"no cgroup information ({err.strerror})"
    folders: list[str] = []
    missing = {c: why for c in CAPS if c not in found}
    for home, version in sorted(set(found.values())):
        controllers = [c for c, where in found.items() if where == (home, version)]
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
                for file, value, required in _settings(controller, version, memory, processes, cpus):
                    if required or os.path.exists(f"{folder}/{file}"):
                        with open(f"{folder}/{file}", "w", encoding="utf-8") as f:
                            f.write(value)
            except OSError as err:
                missing[controller] = f"cgroup v{version} {file}: {err.strerror}"
    return folders, "; ".join(f"{CAPS[c]} ({why})" for c, why in sorted(missing.items()))


def remove(folders: list[str]) -> None:
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


def join(folders: list[str]) -> list[str]:
    """The command prefix that moves the program into `folders` (cgroups) before it starts anything."""
    return ["sh", "-c", _JOIN, "sh", *folders, "--"] if folders else []
