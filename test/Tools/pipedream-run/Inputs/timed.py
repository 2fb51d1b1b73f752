"""timed.py LIMIT COMMAND...: runs COMMAND, passing its output through, and
prints `exit status N after S s`. Exits 0 when COMMAND failed (non-zero)
within LIMIT seconds, 1 when it succeeded or took longer (it is killed
after LIMIT + 30 s so a hang cannot stall the test suite)."""

import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
try:
    status = subprocess.run(sys.argv[2:], timeout=limit + 30).returncode
except subprocess.TimeoutExpired:
    print("hung: still running after %.0f s" % (limit + 30), flush=True)
    sys.exit(1)
elapsed = time.monotonic() - start
print("exit status %d after %.1f s" % (status, elapsed), flush=True)
sys.exit(0 if status != 0 and elapsed <= limit else 1)
