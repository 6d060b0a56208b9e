"""Make docs/view.png, the README's screenshot: the page as it opens (1280 x 800) on a trace of
examples/buggy_softmax_off_by_one.py, through web/tests/drive.mjs (`make view-png`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TILESCOPE = os.environ.get("TILESCOPE_BIN") or os.path.join(ROOT, "build", "tilescope")


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([TILESCOPE, "trace", "-o", "s.tstrace", "--", sys.executable,
                        os.path.join(ROOT, "examples", "buggy_softmax_off_by_one.py")], cwd=d, capture_output=True,
                       timeout=300)  # exit status 1: the example's findings
        view = subprocess.Popen([TILESCOPE, "view", "s.tstrace"], cwd=d, stdout=subprocess.PIPE, text=True)
        try:
            m = None
            for _ in range(5):
                m = re.search(r"http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}", view.stdout.readline())
                if m:
                    break
            if not m:
                print("view_png: `tilescope view` printed no URL", file=sys.stderr)
                return 1
            script = os.path.join(d, "script.json")
            with open(script, "w") as f:
                json.dump({"url": m.group(0), "screenshots": d, "steps": [{"screenshot": "view"}]}, f)
            subprocess.run(["node", os.path.join(ROOT, "web", "tests", "drive.mjs"), script], check=True,
                           cwd=os.path.join(ROOT, "web"), capture_output=True, timeout=120)
        finally:
            view.send_signal(2)
            view.wait(timeout=10)
        shutil.copy(os.path.join(d, "view.png"), os.path.join(ROOT, "docs", "view.png"))
    print("docs/view.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
