"""Fixtures for the SwiftRTC interop suite: processes, Chromium, servers, artifacts, timeouts.

Environment:
  SWIFTRTC_BIN      swiftrtc binary (default .build/debug/swiftrtc, relative to the repo root)
  INTEROP_STANDIN=1 replace `swiftrtc echo` by the aiortc reference echo (interop/peers.py);
                    probe (Swift-offers) tests are skipped in that mode
  CI=true           nothing skips: a missing Chromium, aiortc or binary fails with a reason
  CHROMIUM_BIN      Chromium binary (default /usr/lib/chromium/chromium)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "artifacts" / "interop"
CI = os.environ.get("CI", "").lower() == "true"
STANDIN = os.environ.get("INTEROP_STANDIN", "") not in ("", "0")
DEFAULT_TEST_TIMEOUT = 90  # seconds, whole test including fixture setup


def swiftrtc_bin() -> Path:
    p = Path(os.environ.get("SWIFTRTC_BIN", ".build/debug/swiftrtc"))
    return p if p.is_absolute() else REPO_ROOT / p


def require(condition: bool, reason: str) -> None:
    """Skip when a prerequisite is missing — unless CI=true, where it is a failure."""
    if condition:
        return
    if CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config):
    config.addinivalue_line("markers", "timeout(seconds): per-test wall-clock limit (SIGALRM)")
    config.addinivalue_line("markers", "swift_offerer: needs the real swiftrtc binary (no stand-in)")


# ---- per-test timeout and logs on failure -------------------------------------------------

class TestTimeout(Exception):
    pass


@pytest.fixture(autouse=True)
def _test_timeout(request):
    marker = request.node.get_closest_marker("timeout")
    seconds = int(marker.args[0]) if marker else DEFAULT_TEST_TIMEOUT

    def on_alarm(_signum, _frame):
        raise TestTimeout(f"test exceeded its {seconds} s limit")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def logs(request):
    """Register (name, callable → str) log sources; they are attached to the report on failure."""
    sources: list[tuple[str, object]] = []
    request.node._interop_logs = sources
    return sources


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and call.when in ("setup", "call"):
        for name, source in getattr(item, "_interop_logs", []):
            try:
                text = source() if callable(source) else str(source)
            except Exception as exc:  # a dead source must not hide the real failure
                text = f"<could not read: {exc!r}>"
            rep.sections.append((f"interop log: {name}", text[-20000:] or "<empty>"))


@pytest.fixture
def artifact_dir(request) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    d = ARTIFACTS / name
    shutil.rmtree(d, ignore_errors=True)  # stale artifacts from an earlier run would mislead
    d.mkdir(parents=True, exist_ok=True)
    return d


# ---- processes ------------------------------------------------------------------------------

class ManagedProcess:
    """A child process with stdout/stderr in files; killed (its own process group) at close."""

    def __init__(self, args: list[str], log_path: Path, cwd: Path = REPO_ROOT, env: dict | None = None,
                 stdin_pipe: bool = False):
        self.args = args
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL, env=env,
                                     start_new_session=True)

    def send_line(self, line: str) -> None:
        """Writes one line to the child's stdin (needs stdin_pipe=True)."""
        assert self.proc.stdin is not None, "started without stdin_pipe"
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match:
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.text())
            if m:
                return m
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.args[0]} exited with {self.proc.returncode} before printing "
                                   f"/{pattern}/:\n{self.text()[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.args[0]} printed no /{pattern}/ within {timeout} s:\n"
                                   f"{self.text()[-4000:]}")
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=5)
        self._log.close()


def free_port() -> int:
    from interop.peers import free_port as fp
    return fp()


# ---- aiortc / Chromium prerequisites ---------------------------------------------------------

@pytest.fixture(scope="session")
def aiortc_available() -> bool:
    try:
        import aiortc  # noqa: F401
        return True
    except ImportError:
        return False


@pytest.fixture
def need_aiortc(aiortc_available):
    require(aiortc_available, f"aiortc is not importable from {sys.executable} "
                              "(pip install aiortc into the venv)")


@pytest.fixture(scope="session")
def pages_server():
    from interop.peers import StaticServer
    server = StaticServer()
    yield server
    server.close()


def launch_browser(extra_flags: tuple[str, ...] = ()):
    """Headless Chromium; missing, it fails the test under CI=true and skips it elsewhere."""
    from interop.cdp import Browser, ChromiumNotFound
    try:
        return Browser.launch(extra_flags=extra_flags)
    except ChromiumNotFound as exc:
        if CI:
            pytest.fail(f"CI=true and {exc}", pytrace=False)
        pytest.skip(str(exc))


def open_test_page(browser, url: str, logs, artifact_dir, save_sdp: bool = False):
    """A page of ours (generator for a fixture): its console, window.log and Chromium's stderr go
    to the report; afterwards window.log (and with `save_sdp` the last offer/answer) is saved,
    its peer connection closed and the tab closed."""
    p = browser.new_page(url)
    logs.append(("chromium console", lambda: "\n".join(p.console)))
    logs.append(("page log", lambda: "\n".join(p.evaluate("window.log", timeout=5) or [])))
    logs.append(("chromium stderr (tail)", lambda: browser.stderr_tail()))
    yield p
    try:
        (artifact_dir / "page-log.txt").write_text("\n".join(p.evaluate("window.log", timeout=5) or []))
        for name in ("lastOffer", "lastAnswer") if save_sdp else ():
            sdp = p.evaluate(f"window.{name} || ''", timeout=5)
            if sdp:
                (artifact_dir / f"chromium-{name}.sdp").write_text(sdp)
        p.evaluate("window.pc && window.pc.close()", timeout=5)
    except Exception:
        pass
    try:
        browser.send("Target.closeTarget", {"targetId": p.target_id}, timeout=5)
    except Exception:
        pass


@pytest.fixture(scope="module")
def browser():
    b = launch_browser()
    yield b
    b.close()


@pytest.fixture
def page(browser, pages_server, logs, artifact_dir):
    yield from open_test_page(browser, pages_server.url + "index.html", logs, artifact_dir)


# ---- echo server under test (swiftrtc echo, or the aiortc reference with INTEROP_STANDIN=1) ---

class EchoServer:
    def __init__(self, impl: str, url: str, process: ManagedProcess):
        self.impl = impl
        self.url = url
        self.process = process


@pytest.fixture
def echo_server(logs, artifact_dir, aiortc_available):
    port = free_port()
    if STANDIN:
        require(aiortc_available, "INTEROP_STANDIN=1 needs aiortc for the reference echo")
        impl = "aiortc-reference"
        args = [sys.executable, "-u", "-m", "interop.peers", "echo", "--http", f"127.0.0.1:{port}"]
    else:
        binary = swiftrtc_bin()
        require(binary.is_file() and os.access(binary, os.X_OK),
                f"swiftrtc binary not found at {binary} (build it, set SWIFTRTC_BIN, "
                "or run with INTEROP_STANDIN=1)")
        impl = "swiftrtc"
        args = [str(binary), "echo", "--http", f"127.0.0.1:{port}"]
    proc = ManagedProcess(args, artifact_dir / "echo-server.log")
    logs.append((f"echo server ({impl}) output", proc.text))
    try:
        m = proc.wait_for_line(r"^echo: listening on (http://\S+)\s*$", timeout=20)
        yield EchoServer(impl, m.group(1), proc)
    finally:
        proc.close()


# ---- swiftrtc probe (B-type tests, no stand-in) -------------------------------------------------

@pytest.fixture
def swift_probe_bin() -> Path:
    if STANDIN:
        pytest.skip("INTEROP_STANDIN=1: Swift-offerer (probe) tests have no stand-in")
    binary = swiftrtc_bin()
    require(binary.is_file() and os.access(binary, os.X_OK),
            f"swiftrtc binary not found at {binary} (build it or set SWIFTRTC_BIN)")
    return binary


def run_probe(binary: Path, url: str, json_path: Path, log_path: Path, duration: float,
              sample, sample_interval: float = 0.5, timeout: float = 40, extra_args: list[str] = ()):
    """Run `swiftrtc probe` (with extra_args), calling sample() every sample_interval s while it runs.

    Returns (exit code, probe output text, [samples]).
    """
    args = [str(binary), "probe", url, "--duration", str(duration), "--json", str(json_path), *extra_args]
    json_path.unlink(missing_ok=True)
    proc = ManagedProcess(args, log_path)
    samples = []
    deadline = time.monotonic() + timeout
    try:
        while proc.proc.poll() is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"swiftrtc probe still running after {timeout} s:\n{proc.text()[-4000:]}")
            try:
                samples.append(sample())
            except Exception as exc:
                samples.append({"error": repr(exc)})
            time.sleep(sample_interval)
        samples.append(sample())  # after the probe finished sending
    finally:
        proc.close()
    return proc.proc.returncode, proc.text(), samples


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, default=str))


@pytest.fixture
def swift_bin():
    """The swiftrtc CLI under test; a missing binary fails (or skips outside CI) with how to build it."""
    binary = swiftrtc_bin()
    require(binary.is_file() and os.access(binary, os.X_OK),
            f"swiftrtc binary not found at {binary} (swift build --product swiftrtc, or set SWIFTRTC_BIN)")
    return binary
