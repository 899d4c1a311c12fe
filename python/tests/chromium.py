"""Load a page in Debian's headless chromium over the DevTools protocol and
report what a user's browser would: uncaught JavaScript errors, console
errors, the result of a DOM query, and optionally a screenshot."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-port=0", "--remote-allow-origins=*"]


@dataclass
class PageResult:
    errors: list = field(default_factory=list)   # JS exceptions and console errors
    value: object = None                         # result of the probe expression
    screenshot: str | None = None


def available() -> bool:
    return os.path.exists(CHROMIUM)


def load(path: str, probe: str = "null", screenshot: str | None = None,
         width: int = 1280, height: int = 1600, timeout: float = 60) -> PageResult:
    profile = tempfile.mkdtemp(prefix="pytool-chromium-")
    proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        ws_url = _page_socket(_browser_port(proc, timeout))
        return _drive(ws_url, path, probe, screenshot, width, height, timeout)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


def _browser_port(proc, timeout) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if m:
            return int(m.group(1))
        if not line and proc.poll() is not None:
            break
    raise RuntimeError("chromium did not start its DevTools endpoint")


def _page_socket(port) -> str:
    import urllib.request
    for _ in range(50):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        time.sleep(0.1)
    raise RuntimeError("chromium has no page target")


class _Session:
    def __init__(self, ws_url, timeout):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(e.get("method") == method for e in self.events):
                return True
            self.events.append(json.loads(self.ws.recv()))
        return False


def _drive(ws_url, path, probe, screenshot, width, height, timeout) -> PageResult:
    s = _Session(ws_url, timeout)
    try:
        for domain in ("Runtime", "Log", "Page"):
            s.call(f"{domain}.enable")
        s.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
               deviceScaleFactor=1, mobile=False)
        s.call("Page.navigate", url="file://" + os.path.abspath(path))
        if not s.wait_for("Page.loadEventFired", timeout):
            raise RuntimeError("page did not finish loading")
        time.sleep(0.5)   # let plotly's deferred rendering run
        value = s.call("Runtime.evaluate", expression=probe, returnByValue=True)
        result = PageResult(errors=_errors(s.events),
                            value=value.get("result", {}).get("value"))
        if "exceptionDetails" in value:
            result.errors.append("probe: " + json.dumps(value["exceptionDetails"])[:300])
        if screenshot:
            shot = s.call("Page.captureScreenshot", format="png")
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            result.screenshot = screenshot
        return result
    finally:
        s.ws.close()


def _errors(events) -> list[str]:
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            out.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                     for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            out.append("log: " + p["entry"].get("text", ""))
    return out
