"""The sandbox from inside: a probe program reports what it can see, write, reach and use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalebook import sandbox

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(bool(sandbox.available()), reason=f"no sandbox here: {sandbox.available()}")
# bubblewrap where installed; as root, util-linux namespaces too (the grader's fallback without bubblewrap)
KINDS = [k for k, ok in (("bubblewrap", shutil.which("bwrap")), ("namespaces", os.geteuid() == 0)) if ok]

PROBE = r'''
import json, os, socket, sys
found = {"uid": os.getuid(), "pid": os.getpid(), "env": sorted(os.environ), "home": os.listdir(".")}
try:
    import scalebook.problems
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
               str(ROOT / "scalebook" / "problems" / "__init__.py")]
    ran = sandbox.run(["python", "probe.py", *targets], {"probe.py": tmp / "probe.py"}, answers,
                      sandbox.Limits(processes=32), timeout=60, env={"OUT": sandbox.ANSWERS}, kind=request.param)
    assert ran.returncode == 0, ran.output
    assert secret.read_text() == "{}"
    return json.loads(answers.read_text())


def test_the_sandbox_sees_only_its_own_files(probe):
    assert probe["key"] == "hidden" and probe["read"] == []
    assert probe["escaped"] == "False"  # the classic chroot escape finds nothing of the host
    assert sorted(probe["home"]) == ["probe.py"]
    assert probe["wrote"] == ["/tmp/probe", "probe"]  # its private home and /tmp, nothing else


def test_the_sandbox_is_unprivileged_offline_and_clean(probe):
    assert probe["uid"] != 0 and probe["network"] is False
    assert probe["pid"] == 1 and len(probe["processes"]) == probe["forks"] + 1  # its own pid namespace
    assert set(probe["env"]) <= {"HOME", "PATH", "PYTHONPATH", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD",
                                 "OUT", "PYDEVD_DISABLE_FILE_VALIDATION", "JAX_PLATFORMS", "MPLBACKEND",
                                 sandbox.LIFELINE}


def test_memory_and_process_caps_hold(probe):
    assert probe["30 GiB"] == "refused"
    assert 10 < probe["forks"] < 32


@pytest.mark.parametrize("kind", KINDS)
def test_the_time_limit_kills_the_whole_tree(tmp_path, kind):
    (tmp_path / "stay.py").write_text("import os, subprocess, sys, time\n"
                                      "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
                                      " start_new_session=True)\ntime.sleep(300)\n")
    (tmp_path / "answers").touch()
    start = time.monotonic()
    ran = sandbox.run(["python", "stay.py"], {"stay.py": tmp_path / "stay.py"}, tmp_path / "answers",
                      sandbox.Limits(), timeout=3, kind=kind)
    assert ran.timed_out and time.monotonic() - start < 30
    time.sleep(0.5)
    assert not any("time.sleep(300)" in Path(f"/proc/{p}/cmdline").read_bytes().decode("utf-8", "replace")
                   for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline"))


def test_limits_are_checked():
    with pytest.raises(ValueError, match="memory"):
        sandbox.Limits(memory=0)


GRADER = r'''
import sys
from pathlib import Path
from scalebook import sandbox
program = ("from scalebook import sandbox; sandbox.hold_lifeline(); import subprocess, sys, time; "
           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # lifeline-orphan'], "
           "start_new_session=True); time.sleep(300)")
sandbox.run(["python", "-c", program], {}, Path(sys.argv[1]), sandbox.Limits(), timeout=300, kind=sys.argv[2])
'''


def _orphans() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"lifeline-orphan" in cmdline and b"GRADER" not in cmdline and b"program = " not in cmdline:
            found.append(pid)
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_a_grader_killed_mid_run_leaves_nothing_running(tmp_path, kind):
    (tmp_path / "answers").touch()
    grader = subprocess.Popen([sys.executable, "-c", GRADER, str(tmp_path / "answers"), kind])
    deadline = time.monotonic() + 30
    while not _orphans() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _orphans(), "the sandboxed program did not start"
    grader.kill()
    grader.wait()
    deadline = time.monotonic() + 5
    while _orphans() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _orphans() == []
