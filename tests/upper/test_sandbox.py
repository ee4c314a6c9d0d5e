"""The sandbox from inside: a probe program reports what it can see, write, reach and use."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from speed import assert_stopped

from scalebook.course.grader import cgroups, sandbox
from scalebook.course.grader.limits import Limits

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(bool(sandbox.available()), reason=f"no sandbox here: {sandbox.available()}")
# bubblewrap where installed; as root, util-linux namespaces too (the grader's fallback without bubblewrap)
KINDS = [k for k, ok in (("bubblewrap", shutil.which("bwrap")), ("namespaces", os.geteuid() == 0)) if ok]

PROBE = r'''
import json, os, socket, sys
found = {"uid": os.getuid(), "pid": os.getpid(), "env": sorted(os.environ), "home": os.listdir(".")}
try:
    import scalebook.course.key
    found["key"] = "imported"
except ImportError:
    found["key"] = "hidden"
found["read"] = []
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            f.read(1)
        found["read"].append(path)
    except OSError:
        pass
found["wrote"] = []
package = os.path.dirname(__import__("scalebook").__file__)
for path in ["/etc/probe", sys.argv[1], "/tmp/probe", "probe", package + "/x"]:
    try:
        with open(path, "a") as f:
            f.write("x")
        found["wrote"].append(path)
    except OSError:
        pass
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    found["network"] = True
except OSError:
    found["network"] = False
try:
    bytearray(30 * 2**30)
    found["30 GiB"] = "allocated"
except MemoryError:
    found["30 GiB"] = "refused"
ESCAPE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.unshare(0x10000000)  # a user namespace of its own: CAP_SYS_CHROOT there
os.makedirs("jail", exist_ok=True)
libc.chroot(b"jail")
for _ in range(30):
    os.chdir("..")
libc.chroot(b".")
print(any(os.path.exists(p) for p in sys.argv[1:]))
"""
import subprocess
found["escaped"] = subprocess.run([sys.executable, "-c", ESCAPE, *sys.argv[1:]], capture_output=True,
                                  text=True).stdout.strip()
USERNS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("created" if libc.unshare(0x10000000) == 0 else os.strerror(ctypes.get_errno()))
"""
found["userns"] = subprocess.run([sys.executable, "-c", USERNS], capture_output=True, text=True).stdout.strip()
with open("/dev/null", "w") as f:
    f.write("x")
with open("/dev/urandom", "rb") as f:
    found["urandom"] = len(f.read(16))
found["devnull"] = subprocess.run([sys.executable, "-c", "print(1)"], stdout=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL).returncode
found["files"] = 0
try:
    while found["files"] < 3000:
        open(f"/tmp/f{found['files']}", "w").close()
        found["files"] += 1
except OSError:
    pass
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            __import__("time").sleep(60)
            os._exit(0)
        n += 1
except OSError:
    pass
found["forks"] = n
found["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
with open(os.environ["OUT"], "w") as f:
    json.dump(found, f)
'''


@pytest.fixture(scope="module", params=KINDS)
def probe(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the probe found, run once in each kind of sandbox, capped at 32 tasks."""
    tmp = tmp_path_factory.mktemp("probe")
    (tmp / "probe.py").write_text(PROBE)
    secret = tmp / "other-submission.ipynb"
    secret.write_text("{}")
    answers = tmp / "answers.jsonl"
    answers.touch()
    targets = [str(secret), str(ROOT / "solutions" / "01_rooflines.md"), "/proc/1/root" + str(secret),
               f"/proc/{os.getpid()}/cwd/solutions/01_rooflines.md",
               str(ROOT / "scalebook" / "course" / "key" / "__init__.py")]
    ran = sandbox.run(["python", "probe.py", *targets], {"probe.py": PROBE.encode()}, answers,
                      Limits(processes=32, inodes=2000), timeout=60, env={"OUT": sandbox.ANSWERS},
                      kind=request.param)
    assert ran.returncode == 0, ran.output
    assert secret.read_text() == "{}"
    return {**json.loads(answers.read_text()), "kind": request.param}


@pytest.mark.slow
def test_the_sandbox_sees_only_its_own_files(probe):
    assert probe["key"] == "hidden" and probe["read"] == []
    assert probe["escaped"] == "False"  # the classic chroot escape finds nothing of the host
    assert sorted(probe["home"]) == ["probe.py"]
    assert probe["wrote"] == ["/tmp/probe", "probe"]  # its private home and /tmp, nothing else


@pytest.mark.slow
def test_the_sandbox_is_unprivileged_offline_and_clean(probe):
    assert probe["uid"] != 0 and probe["network"] is False
    assert probe["pid"] == 1 and len(probe["processes"]) == probe["forks"] + 1  # its own pid namespace
    assert set(probe["env"]) <= {"HOME", "PATH", "PYTHONPATH", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD",
                                 "OUT", "PYDEVD_DISABLE_FILE_VALIDATION", "JAX_PLATFORMS", "MPLBACKEND",
                                 sandbox.LIFELINE}


@pytest.mark.slow
def test_memory_and_process_caps_hold(probe):
    assert probe["30 GiB"] == "refused"
    assert 10 < probe["forks"] < 32


@pytest.mark.slow
def test_no_user_namespace_can_be_made_inside(probe):
    assert probe["userns"] == "Operation not permitted"


@pytest.mark.slow
def test_the_devices_honest_code_uses_work(probe):
    assert probe["urandom"] == 16 and probe["devnull"] == 0


@pytest.mark.slow
def test_the_scratch_folders_cap_their_file_count(probe):
    if probe["kind"] == "bubblewrap" and os.geteuid() != 0:
        pytest.skip(f"bubblewrap as another user cannot cap a tmpfs's inodes: {sandbox.describe()}")
    assert probe["files"] < 2000


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_time_limit_kills_the_whole_tree(tmp_path, kind):
    mark = f"time.sleep(300)  # {secrets.token_hex(8)}"  # this test's processes, not another run's
    (tmp_path / "stay.py").write_text("import os, subprocess, sys, time\n"
                                      f"subprocess.Popen([sys.executable, '-c', 'import time; {mark}'],"
                                      " start_new_session=True)\ntime.sleep(300)\n")
    (tmp_path / "answers").touch()
    start = time.monotonic()
    ran = sandbox.run(["python", "stay.py"], {"stay.py": (tmp_path / "stay.py").read_bytes()}, tmp_path / "answers",
                      Limits(), timeout=3, kind=kind)
    assert ran.timed_out
    assert_stopped(time.monotonic() - start, 3, "a sandboxed tree of sleepers", unstopped=300)
    time.sleep(0.5)
    assert not any(mark in Path(f"/proc/{p}/cmdline").read_bytes().decode("utf-8", "replace")
                   for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline"))


def test_limits_are_checked():
    with pytest.raises(ValueError, match="memory"):
        Limits(memory=0)


GRADER = r'''
import sys
from pathlib import Path
from scalebook.course.grader import sandbox
from scalebook.course.grader.limits import Limits
program = ("from scalebook.course.grader import sandbox; sandbox.hold_lifeline(); import subprocess, sys, time; "
           f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # {sys.argv[3]}'], "
           "start_new_session=True); time.sleep(300)")
sandbox.run(["python", "-c", program], {}, Path(sys.argv[1]), Limits(), timeout=300, kind=sys.argv[2])
'''


def _orphans(mark: str) -> list[str]:
    """Processes that carry `mark` (one test's own orphan), other than its grader."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if mark.encode() in cmdline and b"program = " not in cmdline:
            found.append(pid)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_grader_killed_mid_run_leaves_nothing_running(tmp_path, kind):
    (tmp_path / "answers").touch()
    mark = f"lifeline-orphan-{secrets.token_hex(8)}"
    grader = subprocess.Popen([sys.executable, "-c", GRADER, str(tmp_path / "answers"), kind, mark])
    deadline = time.monotonic() + 30
    while not _orphans(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _orphans(mark), "the sandboxed program did not start"
    grader.kill()
    grader.wait()
    deadline = time.monotonic() + 5
    while _orphans(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _orphans(mark) == []


HOGS = r'''
import json, os, time
def child(work):
    pid = os.fork()
    if pid == 0:
        try:
            work()
        except MemoryError:
            os._exit(3)
        os._exit(0)
    return pid
def hold():
    block = bytearray(160 * 2**20)
    time.sleep(3)
def spin():
    end = time.monotonic() + 2
    while time.monotonic() < end:
        pass
start = time.monotonic()
holders, spinners = [child(hold) for _ in range(4)], [child(spin) for _ in range(3)]
held = sum(os.waitpid(p, 0)[1] == 0 for p in holders)
for p in spinners:
    os.waitpid(p, 0)
times = os.times()
with open(os.environ["OUT"], "w") as f:
    json.dump({"held": held, "cpu": times.children_user + times.children_system,
               "wall": time.monotonic() - start}, f)
'''


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_cgroup_caps_the_whole_sandbox_cpu_and_memory(tmp_path, kind):
    limits = Limits(memory=400 * 2**20, cpus=0.5)
    if "not capped" in (how := sandbox.describe(limits)):
        pytest.skip(f"this machine gives the grader no cgroup: {how}")
    (tmp_path / "answers").touch()
    ran = sandbox.run(["python", "-c", HOGS], {}, tmp_path / "answers", limits, timeout=120,
                      env={"OUT": sandbox.ANSWERS}, kind=kind)
    assert ran.returncode == 0 and ran.uncapped == "", ran.output
    found = json.loads((tmp_path / "answers").read_text())
    assert found["held"] < 4  # four processes of 160 MiB each do not fit in 400 MiB together
    assert found["cpu"] < 0.5 * found["wall"] + 0.5  # three busy processes get half a CPU between them


@pytest.mark.slow
def test_the_cgroups_are_removed_after_the_run(tmp_path):
    (tmp_path / "answers").touch()
    before = {home: set(os.listdir(home)) for home, _ in cgroups.homes().values()}
    sandbox.run(["python", "-c", "pass"], {}, tmp_path / "answers", Limits(), timeout=60)
    after = {home: set(os.listdir(home)) for home, _ in cgroups.homes().values()}
    assert {h: {e for e in names - before[h] if e.startswith(f"scalebook-{os.getpid()}-")}
            for h, names in after.items()} == {h: set() for h in after}


COURSE = r'''
import json, sys
from pathlib import Path
from scalebook.course.grader import sandbox
from scalebook.course.grader.limits import Limits
course = Path(sys.argv[1])
targets = [course / "solutions" / "01_rooflines.md", course / "scalebook" / "course" / "key" / "__init__.py",
           course / "tests" / "data" / "problem_answers.toml", course / "notes.md"]
probe = ("import json, os, sys\nfound = {'read': []}\nfor p in sys.argv[1:]:\n    try:\n"
         "        open(p, 'rb').read(1)\n        found['read'].append(p)\n    except OSError:\n        pass\n"
         "try:\n    import scalebook.course.key\n    found['key'] = 'imported'\nexcept ImportError:\n"
         "    found['key'] = 'hidden'\nimport scalebook\nfound['package'] = scalebook.__file__\n"
         "found['listing'] = sorted(os.listdir(sys.argv[5]))\n"
         "open(os.environ['OUT'], 'w').write(json.dumps(found))")
answers = Path(sys.argv[2])
ran = sandbox.run(["python", "-c", probe, *map(str, targets), str(course)], {}, answers, Limits(),
                  timeout=60, env={"OUT": sandbox.ANSWERS}, kind=sys.argv[3])
print(ran.returncode, ran.output[-2000:])
'''


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("base", ["/opt", "/usr/local", "/usr/src", "/etc"])
def test_the_key_stays_hidden_wherever_the_course_lives(tmp_path, base, kind):
    if not os.access(base, os.W_OK):
        pytest.skip(f"{base} is not writable here, so no course can be put there")
    course = Path(tempfile.mkdtemp(prefix="scalebook-course-", dir=base))
    try:
        shutil.copytree(ROOT / "scalebook", course / "scalebook", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "solutions", course / "solutions")
        (course / "tests" / "data").mkdir(parents=True)
        shutil.copy(ROOT / "tests" / "course" / "data" / "problem_answers.toml", course / "tests" / "data")
        (course / "notes.md").write_text("the teacher's notes")
        course.chmod(0o755)
        (tmp_path / "answers").touch()
        ran = subprocess.run([sys.executable, "-c", COURSE, str(course), str(tmp_path / "answers"), kind],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(course)},
                             cwd=tmp_path, timeout=120)
        assert ran.stdout.startswith("0 "), ran.stdout + ran.stderr
        found = json.loads((tmp_path / "answers").read_text())
    finally:
        shutil.rmtree(course)
    assert found["package"] == str(course / "scalebook" / "__init__.py")
    assert found["read"] == [] and found["key"] == "hidden"
    assert found["listing"] == ["scalebook"]


@pytest.mark.parametrize("version, expected", [
    (1, {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "150000", "memory.limit_in_bytes": str(2**30),
         "pids.max": "64"}),
    (2, {"cpu.max": "150000 100000", "memory.max": str(2**30), "pids.max": "64"}),
])
def test_a_sandbox_cgroup_caps_cpu_memory_and_processes_in_v1_and_v2(tmp_path, monkeypatch, version, expected):
    homes = dict.fromkeys(("cpu", "memory", "pids"), (str(tmp_path), version))
    monkeypatch.setattr(cgroups, "homes", lambda: homes)
    folders, missing = cgroups.create("one", memory=2**30, processes=64, cpus=1.5)
    assert folders == [str(tmp_path / "one")] and missing == ""
    assert {p.name: p.read_text() for p in (tmp_path / "one").iterdir()} == expected
    if version == 2:  # the parent hands the controllers down
        assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"


def test_without_cgroups_the_sandbox_says_what_is_not_capped(monkeypatch):
    def nothing() -> dict:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cgroups, "homes", nothing)
    how = sandbox.describe.__wrapped__(Limits())
    assert how.startswith("not capped here: CPU share (no cgroup information (Permission denied))")
    assert "memory of the whole sandbox" in how and "processes of the whole sandbox" in how


# keyctl(2) and add_key(2) by number (glibc wraps neither): arch/x86/entry/syscalls/syscall_64.tbl and
# include/uapi/asm-generic/unistd.h. The operations and special ids are those of linux/keyctl.h, as keyctl(2)
# documents them (https://man7.org/linux/man-pages/man2/keyctl.2.html).
KEYS = r'''
import ctypes, json, os, sys
NR = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
SESSION, GET_ID, JOIN, REVOKE, SEARCH, READ = -3, 0, 1, 3, 10, 11
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def keyctl(*args):
    return libc.syscall(NR[1], *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
def read(key):
    buf = ctypes.create_string_buffer(4096)
    n = keyctl(READ, key, buf, 4096)
    return buf.raw[:n] if n >= 0 else None
'''
KEY_THIEF = KEYS + r'''
teacher = int(sys.argv[1])
listed = read(keyctl(GET_ID, SESSION, 0)) or b""
keys = [teacher, keyctl(SEARCH, SESSION, b"user", b"scalebook-teacher", 0)] + [
    int.from_bytes(listed[i:i + 4], "little") for i in range(0, len(listed), 4)]
found = {"payloads": [p.decode("latin-1") for p in map(read, keys) if p], "revoked": keyctl(REVOKE, teacher) == 0}
with open(os.environ["OUT"], "w") as f:
    json.dump(found, f)
'''
KEY_OWNER = KEYS + r'''
from pathlib import Path
from scalebook.course.grader import sandbox
from scalebook.course.grader.limits import Limits
if keyctl(JOIN, None) < 0:  # a session keyring of this process's own, not the test run's
    print(json.dumps({"skip": os.strerror(ctypes.get_errno())}))
    sys.exit()
secret = b"the teacher's token"
teacher = libc.syscall(NR[0], b"user", b"scalebook-teacher", secret, len(secret), ctypes.c_long(SESSION))
ran = sandbox.run(["python", "-c", sys.argv[3], str(teacher)], {}, Path(sys.argv[1]), Limits(), timeout=60,
                  env={"OUT": sandbox.ANSWERS}, kind=sys.argv[2])
print(json.dumps({"ran": [ran.returncode, ran.output[-2000:]], "intact": read(teacher) == secret,
                  **json.loads(Path(sys.argv[1]).read_text() or "{}")}))
'''


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_notebook_can_neither_read_nor_revoke_the_graders_keys(tmp_path, kind):
    (tmp_path / "answers").touch()
    ran = subprocess.run([sys.executable, "-c", KEY_OWNER, str(tmp_path / "answers"), kind, KEY_THIEF],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    found = json.loads(ran.stdout.splitlines()[-1]) if ran.stdout else {"error": ran.stderr[-2000:]}
    if "skip" in found:
        pytest.skip(f"no keyrings here (keyctl: {found['skip']}), so none can leak")
    assert found.get("ran", [None])[0] == 0, found
    assert found["payloads"] == [] and found["revoked"] is False and found["intact"] is True


FILES_AND_PTYS = r'''
import json, os, resource
found = {"nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "ptys": 0}
held = []
try:
    while found["ptys"] < 64:
        held.append(os.openpty())
        found["ptys"] += 1
except OSError as err:
    found["stopped"] = err.strerror
with open(os.environ["OUT"], "w") as f:
    json.dump(found, f)
'''


def _host(name: str) -> int:
    return int(Path(f"/proc/sys/{name}").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_one_notebook_cannot_take_the_hosts_file_table_or_ptys(tmp_path, kind):
    """With the default limits (512 processes), every process of a sandbox together may hold at most half the
    host's file table (fs.file-max), and the sandbox at most a few ptys, fewer than half of those the host
    leaves to other mounts of devpts (kernel.pty.max less kernel.pty.reserve: Documentation/filesystems/devpts.rst,
    https://docs.kernel.org/filesystems/devpts.html)."""
    (tmp_path / "answers").touch()
    limits = Limits()
    ran = sandbox.run(["python", "-c", FILES_AND_PTYS], {}, tmp_path / "answers", limits, timeout=60,
                      env={"OUT": sandbox.ANSWERS}, kind=kind)
    assert ran.returncode == 0, ran.output
    found = json.loads((tmp_path / "answers").read_text())
    soft, hard = found["nofile"]
    assert soft == hard and limits.processes * hard <= _host("fs/file-max") // 2
    share = (_host("kernel/pty/max") - _host("kernel/pty/reserve")) // 2
    assert found["ptys"] <= min(16, share)
    if kind == "namespaces" or os.geteuid() == 0:  # a devpts of its own, capped: ptys work, up to the cap
        assert found["ptys"] == limits.pty_count() > 0, found


def test_the_file_and_pty_caps_follow_the_host_and_the_job_count(monkeypatch):
    host = {"fs/file-max": 1_000_000, "fs/nr_open": 1_048_576, "kernel/pty/max": 4096, "kernel/pty/reserve": 1024}
    monkeypatch.setattr("scalebook.course.grader.limits.host_limit", host.get)
    assert Limits(jobs=2).open_files() == 1_000_000 // (2 * 2 * 512)  # 488, below the default 1024
    assert Limits(jobs=2, processes=64).open_files() == 1024
    assert Limits(jobs=2).pty_count() == 16
    host.update({"fs/file-max": 10_000, "kernel/pty/max": 1100})  # a small host: the floor, and a few ptys
    assert Limits(jobs=8).open_files() == 64 and Limits(jobs=8).pty_count() == 76 // 16
    host.update({"kernel/pty/max": 1024})
    assert Limits().pty_count() == 0
    # no /proc/sys: the defaults alone
    monkeypatch.setattr("scalebook.course.grader.limits.host_limit", lambda name: None)
    assert Limits().open_files() == 1024 and Limits().pty_count() == 16
    assert "--nofile=1024" in Limits().prlimit()
    with pytest.raises(ValueError, match="jobs"):
        Limits(jobs=0)
