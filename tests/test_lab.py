"""`make lab`: JupyterLab starts (as root too), on 127.0.0.1 with a token, and runs a chapter's cell.

The test drives the server as JupyterLab's front end does: the REST API opens a chapter and starts
a session (a kernel) for it, and the kernel's websocket runs a cell. It needs the packages of
requirements-lab.txt (`make lab` installs them) and is skipped without them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import uuid

import pytest

from _paths import ROOT

pytestmark = pytest.mark.rehearsal  # a user's whole path, run for real: `make rehearse`

pytest.importorskip("jupyterlab", reason="make lab installs requirements-lab.txt")
requests = pytest.importorskip("requests")
websocket = pytest.importorskip("websocket")

CHAPTER = "05_flops_mfu.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """`make lab` on a free port; yields (base URL, token); stops it (and its kernels) afterwards."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("lab") / "lab.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(log_path.parent / "runtime")}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["make", "-s", "lab", f"LAB_PORT={port}"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, token = time.monotonic() + 120, None
        while token is None:
            text = log_path.read_text()
            found = re.search(rf"http://127\.0\.0\.1:{port}/lab\?token=([0-9a-f]+)", text)
            if found:
                token = found.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make lab did not start (exit {proc.poll()}):\n{text[-3000:]}")
            else:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", token, log_path
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # make, jupyter lab and its kernels: one session
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_lab_listens_on_localhost_only_and_wants_its_token(lab):
    base, token, log_path = lab
    assert requests.get(f"{base}/api/contents", timeout=30).status_code == 403  # no token, no access
    listening = requests.get(f"{base}/api/contents", params={"token": token}, timeout=30)
    assert listening.status_code == 200
    assert CHAPTER in {item["name"] for item in listening.json()["content"]}
    if os.geteuid() == 0:
        assert "Running as root is not recommended" not in log_path.read_text()


def test_lab_opens_a_chapter_and_runs_a_cell_in_its_kernel(lab):
    base, token, _ = lab
    auth = {"Authorization": f"token {token}"}
    chapter = requests.get(f"{base}/api/contents/{CHAPTER}", headers=auth, params={"content": 1}, timeout=30)
    assert chapter.status_code == 200 and chapter.json()["type"] == "notebook"
    cells = chapter.json()["content"]["cells"]
    first_code = next(c for c in cells if c["cell_type"] == "code")
    session = requests.post(f"{base}/api/sessions", headers=auth, timeout=60, json={
        "path": CHAPTER, "type": "notebook", "name": CHAPTER, "kernel": {"name": "python3"}})
    assert session.status_code == 201, session.text
    kernel_id = session.json()["kernel"]["id"]
    ws = websocket.create_connection(f"{base.replace('http', 'ws')}/api/kernels/{kernel_id}/channels",
                                     header=[f"Authorization: token {token}"], timeout=120)
    try:
        # the chapter's first code cell (its imports), then a line that uses them
        for code in (first_code["source"], "import lectorch, torch; print('ran', torch.ones(2).sum().item())"):
            outputs = _execute(ws, code)
            assert not [o for o in outputs if o["msg_type"] == "error"], outputs
        assert any("ran 2.0" in o["content"].get("text", "") for o in outputs), outputs
    finally:
        ws.close()
        requests.delete(f"{base}/api/sessions/{session.json()['id']}", headers=auth, timeout=30)


def _execute(ws, code: str) -> list[dict]:
    """Send an execute_request on the shell channel; return the iopub messages until the kernel is idle."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                   "version": "5.3"},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    }))
    outputs = []
    while True:
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id or msg["channel"] != "iopub":
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return outputs
        if msg["msg_type"] in ("stream", "error", "execute_result", "display_data"):
            outputs.append({"msg_type": msg["msg_type"], "content": msg["content"]})
