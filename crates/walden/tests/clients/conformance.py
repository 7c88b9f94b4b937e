"""Shared runner for the client conformance programs.

Each program registers checks; a check either passes, fails, or is a known
gap (a feature Walden does not have yet, named in docs/conformance.md). A
known gap that starts passing is reported so the table can be updated. Every
check runs under a time limit, so a hang is a failure, not a stalled run.
The programs take a libpq connection string and run against PostgreSQL too.
"""

import sys
import threading
import time
import traceback

CHECKS = []


def check(gap=None):
    """Registers a check; `gap` names what Walden lacks if it is expected to fail."""

    def wrap(f):
        CHECKS.append((f.__name__, f, gap))
        return f

    return wrap


def run(call, limit=20):
    """Runs every check through `call(f)` and exits non-zero on a failure."""
    failed = 0
    for name, f, gap in CHECKS:
        box = {}

        def target():
            try:
                call(f)
                box["ok"] = True
            except BaseException as e:  # noqa: BLE001 - reported below
                box["err"] = "".join(traceback.format_exception_only(type(e), e)).strip()

        t0 = time.monotonic()
        th = threading.Thread(target=target, daemon=True)
        th.start()
        th.join(limit)
        secs = time.monotonic() - t0
        if th.is_alive():
            box["err"] = f"no answer within {limit} s (hang)"
        if "ok" in box:
            print(f"PASS {name} ({secs:.2f} s)" + (f" [was a known gap: {gap}]" if gap else ""))
        elif gap:
            print(f"GAP  {name}: {gap} ({box['err'].splitlines()[-1]})")
        else:
            failed += 1
            print(f"FAIL {name}: {box['err']}")
        sys.stdout.flush()
        if th.is_alive():
            # A hung check leaves a connection mid-protocol: stop here.
            print(f"{failed} failed (stopped after a hang)")
            sys.stdout.flush()
            import os

            os._exit(1)
    print(f"{len(CHECKS) - failed} of {len(CHECKS)} ok, {failed} failed")
    sys.exit(1 if failed else 0)
