"""A small Chrome DevTools Protocol client over --remote-debugging-pipe.

Chromium reads NUL-terminated JSON commands from its fd 3 and writes replies and
events to its fd 4. No webdriver and no pip packages are involved.

    with Browser.launch() as browser:
        page = browser.new_page("http://127.0.0.1:8000/index.html")
        print(page.evaluate("1 + 1"))
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable

DEFAULT_CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")

# Flags checked on this machine (see /work/shared/PLATFORM-NOTES.md, "Real peers for tests").
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--allow-loopback-in-peer-connection",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--window-size=800,600",
)


class CDPError(RuntimeError):
    """A DevTools command failed, or the browser went away."""


class JSError(CDPError):
    """The evaluated JavaScript threw; the message is the JS exception text."""


class ChromiumNotFound(CDPError):
    pass


def find_chromium() -> str:
    """Path of the Chromium binary ($CHROMIUM_BIN overrides); raises ChromiumNotFound."""
    env = os.environ.get("CHROMIUM_BIN")
    candidates = (env,) if env else DEFAULT_CHROMIUM_PATHS
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise ChromiumNotFound(
        f"Chromium not found (looked at {', '.join(c for c in candidates if c)}); "
        "install it with `apt-get install -y chromium` or set CHROMIUM_BIN"
    )


class _Pending:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict | None = None


class Browser:
    """One Chromium process driven over the DevTools pipe."""

    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int, user_data_dir: str,
                 stderr_path: str):
        self.proc = proc
        self._write_fd = write_fd
        self._read_fd = read_fd
        self.user_data_dir = user_data_dir
        self.stderr_path = stderr_path
        self._next_id = 1
        self._lock = threading.Lock()          # guards _next_id, _pending and writes
        self._pending: dict[int, _Pending] = {}
        self._listeners: list[Callable[[dict], None]] = []
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()
        self.pages: list[Page] = []

    # ---- launch / close -------------------------------------------------------------------

    @classmethod
    def launch(cls, extra_flags: tuple[str, ...] = (), chromium: str | None = None) -> "Browser":
        # A launch is tried twice: once in a CI run (2026-12-04) a Chromium printed nothing and
        # never answered on the pipe for 30 s, on a host slow for a few minutes, and the three
        # tests of the module that shared it errored. The second try starts from a new profile.
        try:
            return cls._launch_once(extra_flags, chromium)
        except ChromiumNotFound:
            raise
        except CDPError as first:
            print(f"interop: Chromium launch failed, trying once more: {first}", file=sys.stderr)
            return cls._launch_once(extra_flags, chromium)

    @classmethod
    def _launch_once(cls, extra_flags: tuple[str, ...], chromium: str | None) -> "Browser":
        binary = chromium or find_chromium()
        user_data_dir = tempfile.mkdtemp(prefix="interop-chromium-")
        # to_child: we write commands, Chromium reads them on fd 3.
        # from_child: Chromium writes on fd 4, we read.
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()

        def place_fds() -> None:
            # Move both ends above any low fd first so dup2 onto 3/4 cannot clobber the other.
            hi_r = _dup_high(to_child_r)
            hi_w = _dup_high(from_child_w)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        stderr_path = os.path.join(user_data_dir, "chromium-stderr.log")
        stderr_file = open(stderr_path, "wb")
        args = [binary, *CHROMIUM_FLAGS, *extra_flags, f"--user-data-dir={user_data_dir}",
                "--remote-debugging-pipe", "about:blank"]
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=stderr_file,
                stderr=stderr_file,
                preexec_fn=place_fds,
                pass_fds=(3, 4),  # keep 3/4 open across close_fds (which runs after preexec_fn)
                start_new_session=True,
            )
        except Exception:
            for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                os.close(fd)
            stderr_file.close()
            shutil.rmtree(user_data_dir, ignore_errors=True)
            raise
        stderr_file.close()
        os.close(to_child_r)
        os.close(from_child_w)
        browser = cls(proc, to_child_w, from_child_r, user_data_dir, stderr_path)
        try:
            browser.version = browser.send("Browser.getVersion", timeout=30)
        except Exception as exc:
            browser.close()
            raise CDPError(f"Chromium did not answer on the DevTools pipe: {exc}\n"
                           f"{browser.stderr_tail()}") from exc
        return browser

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.proc.poll() is None:
                try:
                    self._raw_send({"id": 0, "method": "Browser.close"})
                    self.proc.wait(timeout=5)
                except Exception:
                    pass
            if self.proc.poll() is None:
                # Kill the whole process group we created (start_new_session), i.e. only our
                # Chromium and its helpers.
                try:
                    os.killpg(self.proc.pid, 9)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        finally:
            for fd in (self._write_fd, self._read_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._fail_pending("browser closed")
            shutil.rmtree(self.user_data_dir, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                data = f.read()
            # D-Bus complaints are noise in a container without a bus.
            lines = [l for l in data.decode("utf-8", "replace").splitlines() if "dbus" not in l]
            return "\n".join(lines)[-limit:]
        except OSError:
            return ""

    # ---- protocol -------------------------------------------------------------------------

    def _raw_send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\0"
        with self._lock:
            view = memoryview(data)
            while view:
                n = os.write(self._write_fd, view)
                view = view[n:]

    def send(self, method: str, params: dict | None = None, session_id: str | None = None,
             timeout: float = 30) -> dict:
        """Send one command and wait for its result; raises CDPError on a protocol error."""
        if self._closed:
            raise CDPError(f"{method}: browser is closed")
        pending = _Pending()
        with self._lock:
            msg_id = self._next_id
            self._next_id += 1
            self._pending[msg_id] = pending
        message: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        self._raw_send(message)
        if not pending.event.wait(timeout):
            with self._lock:
                self._pending.pop(msg_id, None)
            raise CDPError(f"{method}: no reply within {timeout} s")
        reply = pending.reply or {}
        if "error" in reply:
            err = reply["error"]
            raise CDPError(f"{method}: {err.get('message')} ({err.get('code')}) {err.get('data', '')}")
        return reply.get("result", {})

    def add_listener(self, fn: Callable[[dict], None]) -> None:
        self._listeners.append(fn)

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._read_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                try:
                    message = json.loads(raw)
                except ValueError:
                    continue
                self._dispatch(message)
        self._fail_pending("DevTools pipe closed (Chromium exited?)")

    def _dispatch(self, message: dict) -> None:
        if "id" in message:
            with self._lock:
                pending = self._pending.pop(message["id"], None)
            if pending:
                pending.reply = message
                pending.event.set()
            return
        for fn in list(self._listeners):
            try:
                fn(message)
            except Exception:
                pass

    def _fail_pending(self, why: str) -> None:
        with self._lock:
            pendings = list(self._pending.values())
            self._pending.clear()
        for p in pendings:
            p.reply = {"error": {"message": why, "code": -1}}
            p.event.set()

    # ---- pages ----------------------------------------------------------------------------

    def new_page(self, url: str = "about:blank", timeout: float = 30) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})
        target_id = target["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        page = Page(self, target_id, attached["sessionId"])
        self.pages.append(page)
        page.send("Runtime.enable")
        page.send("Page.enable")
        page.send("Log.enable")
        if url != "about:blank":
            page.goto(url, timeout=timeout)
        return page


def _dup_high(fd: int) -> int:
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD, 10)


class Page:
    """One attached page target; commands carry its sessionId (flattened sessions)."""

    def __init__(self, browser: Browser, target_id: str, session_id: str):
        self.browser = browser
        self.target_id = target_id
        self.session_id = session_id
        self.console: list[str] = []   # "level: text" lines, console API, exceptions and log
        self._load_event = threading.Event()
        browser.add_listener(self._on_event)

    def send(self, method: str, params: dict | None = None, timeout: float = 30) -> dict:
        return self.browser.send(method, params, session_id=self.session_id, timeout=timeout)

    def _on_event(self, message: dict) -> None:
        if message.get("sessionId") != self.session_id:
            return
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            parts = []
            for arg in params.get("args", []):
                if "value" in arg:
                    v = arg["value"]
                    parts.append(v if isinstance(v, str) else json.dumps(v))
                else:
                    parts.append(arg.get("description", arg.get("type", "?")))
            self.console.append(f"{params.get('type')}: {' '.join(parts)}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.console.append(f"exception: {_exception_text(details)}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append(f"log.{entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Page.loadEventFired":
            self._load_event.set()

    def goto(self, url: str, timeout: float = 30) -> None:
        self._load_event.clear()
        result = self.send("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            raise CDPError(f"navigate {url}: {result['errorText']}")
        if not self._load_event.wait(timeout):
            raise CDPError(f"navigate {url}: no load event within {timeout} s")

    def evaluate(self, expression: str, await_promise: bool = True, timeout: float = 30) -> Any:
        """Evaluate a JS expression and return its value (JSON-serialisable by value)."""
        result = self.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "awaitPromise": await_promise,
                "returnByValue": True,
                "userGesture": True,
                "timeout": int(timeout * 1000),
            },
            timeout=timeout + 5,
        )
        if "exceptionDetails" in result:
            raise JSError(_exception_text(result["exceptionDetails"]))
        value = result.get("result", {})
        return value.get("value")

    def call(self, function: str, *args: Any, timeout: float = 30) -> Any:
        """Call a global JS function with JSON arguments, awaiting a returned promise."""
        arg_text = ", ".join(json.dumps(a) for a in args)
        return self.evaluate(f"{function}({arg_text})", timeout=timeout)

    def screenshot(self, path: str) -> str:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def wait_for(self, expression: str, timeout: float = 20, interval: float = 0.25) -> Any:
        """Poll a JS expression until it is truthy; returns its last value or raises CDPError."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = self.evaluate(expression, timeout=min(10, timeout))
            if last:
                return last
            if time.monotonic() > deadline:
                raise CDPError(f"timed out after {timeout} s waiting for {expression!r}; last={last!r}")
            time.sleep(interval)


def _exception_text(details: dict) -> str:
    exc = details.get("exception") or {}
    text = exc.get("description") or exc.get("value") or details.get("text") or "JS exception"
    return str(text)
