"""What the server's Python tests (test_server_*.py) share: counted checks that print one line per
failure, a call expected to get a 400 naming something, and the closing "N passed, N failed" line
with the exit status (1 on a failure)."""

import sys

import openai


class Checks:
    def __init__(self, script):
        self.script, self.passed, self.failed = script, 0, 0

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {self.script}: {name}" + (f": {detail}" if detail else ""))

    def refused(self, name, call, needle):
        """The call gets a 400 whose message holds needle."""
        try:
            call()
        except openai.BadRequestError as e:
            self.check(name, needle in str(e), str(e))
            return
        except Exception as e:  # noqa: BLE001 - any other outcome is the failure being reported
            self.check(name, False, f"{type(e).__name__}: {e}")
            return
        self.check(name, False, "accepted")

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
