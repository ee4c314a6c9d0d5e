"""Reading a chapter in JupyterLab changes no source: open, run and save it through a real Jupyter server.

A reader opens `chapters/01_rooflines.ipynb` (the twin of the .md source), runs some cells and saves; another
fills in an answer in an exercise and saves. JupyterLab does this through the server's contents API (GET the
notebook, a kernel session, PUT the notebook back with outputs and the kernel's `language_info`), with the
Jupytext server extension that JupyterLab loads. The .md sources must come out byte for byte as they went in:
the twins carry no pairing (see jupytext.toml), so saving a twin writes the twin only. What the reader's run
leaves in the twin, `make check-sync` reports and `make sync` removes.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("jupytext")
nbformat = pytest.importorskip("nbformat")
jupyter_client = pytest.importorskip("jupyter_client")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ["chapters/01_rooflines", "exercises/01_rooflines"]


class Server:
    """A Jupyter server on a free local port with a token, serving a scratch copy of the notebooks."""

    def __init__(self, root: Path) -> None:
        self.root, self.runtime, self.token = root, root / ".runtime", "roundtrip-token"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(self.runtime), "JAX_NUM_CPU_DEVICES": "8"}
        self.log = open(root / "server.log", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", f"--port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={root}"], cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("GET", "/api/status")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log = (root / "server.log").read_text()[-2000:]
                    raise RuntimeError(f"jupyter server did not start: {log}") from None
                time.sleep(0.2)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read() or b"null")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "jupytext.toml", root / "jupytext.toml")
    for name in NOTEBOOKS:
        (root / name).parent.mkdir(exist_ok=True)
        for suffix in (".md", ".ipynb"):
            shutil.copy(ROOT / f"{name}{suffix}", root / f"{name}{suffix}")
    server = Server(root)
    yield server
    server.stop()


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {name: ((root / f"{name}.md").read_bytes(), (root / f"{name}.md").stat().st_mtime_ns) for name in NOTEBOOKS}


def _await_iopub(client: jupyter_client.BlockingKernelClient, seconds: float = 120) -> None:
    """Return once the kernel's IOPub channel delivers to `client`. A ZeroMQ subscriber joins late: a request sent
    before its subscription is live loses its 'busy'/'idle' messages, and `execute_interactive` then waits for an
    idle status that never comes (a busy machine makes the window wide). Ask for kernel info until a status
    message arrives, then drop what is queued."""
    deadline = time.monotonic() + seconds
    while True:
        client.kernel_info()
        try:
            client.get_iopub_msg(timeout=1)
            break
        except queue.Empty:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the kernel's IOPub channel delivered nothing in {seconds:g} s") from None
    while True:
        try:
            client.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            return


def _run(server: Server, kernel_id: str, nb: dict, cells: int) -> None:
    """Run the first `cells` code cells on the server's kernel and store outputs, counts and language_info in
    `nb`, as JupyterLab's frontend does before it saves."""
    client = jupyter_client.BlockingKernelClient(connection_file=str(server.runtime / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    try:
        # not wait_for_ready: it checks the heartbeat, which a kernel still starting on a busy machine may miss
        nb["metadata"]["language_info"] = client.kernel_info(reply=True, timeout=120)["content"]["language_info"]
        _await_iopub(client)
        for cell in [c for c in nb["cells"] if c["cell_type"] == "code"][:cells]:
            outputs: list = []

            def keep(msg: dict, outputs: list = outputs) -> None:
                if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
                    outputs.append(nbformat.v4.output_from_msg(msg))

            reply = client.execute_interactive(cell["source"], output_hook=keep, timeout=120)
            assert reply["content"]["status"] == "ok", reply["content"]
            cell["execution_count"], cell["outputs"] = reply["content"]["execution_count"], outputs
    finally:
        client.stop_channels()


@pytest.mark.slow
def test_open_run_and_save_a_chapter_leaves_its_md_source_unchanged(server: Server):
    before = _snapshot(server.root)
    path = "chapters/01_rooflines.ipynb"
    nb = server.call("GET", f"/api/contents/{path}?type=notebook&content=1")["content"]
    session = server.call("POST", "/api/sessions", {"path": path, "type": "notebook", "name": "",
                                                     "kernel": {"name": "python3"}})
    try:
        _run(server, session["kernel"]["id"], nb, cells=4)  # install cell, sb.setup(), two checked numbers
        nb["cells"][-1]["source"] += "\n# a reader's note"  # and a reader's edit
        server.call("PUT", f"/api/contents/{path}", {"type": "notebook", "format": "json", "content": nb})
    finally:
        server.call("DELETE", f"/api/sessions/{session['id']}")
    assert _snapshot(server.root) == before  # not rewritten, not even touched
    saved = json.loads((server.root / path).read_text())
    assert saved["metadata"]["language_info"]["name"] == "python"
    assert any(c.get("outputs") for c in saved["cells"])  # the run went into the twin, where check-sync sees it


@pytest.mark.slow
def test_answering_an_exercise_and_saving_leaves_its_md_source_unchanged(server: Server):
    before = _snapshot(server.root)
    path = "exercises/01_rooflines.ipynb"
    nb = server.call("GET", f"/api/contents/{path}?type=notebook&content=1")["content"]
    stub = next(c for c in nb["cells"] if c["cell_type"] == "code" and "= ..." in c["source"])
    stub["source"] = stub["source"].replace("= ...", "= 42", 1)
    server.call("PUT", f"/api/contents/{path}", {"type": "notebook", "format": "json", "content": nb})
    assert _snapshot(server.root) == before
    assert "= 42" in (server.root / path).read_text()


def test_make_lab_allows_root_only_as_root():
    shutil.which("make") or pytest.skip("make is not installed")
    run = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert ("--allow-root" in run.stdout) == (os.getuid() == 0), run.stdout
    assert f'--ServerApp.root_dir="{ROOT}"' in run.stdout  # the repository root, where jupytext.toml is
