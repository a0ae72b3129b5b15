# ATTACK: start 300 processes at import (a bounded fork bomb: each is a `sleep 1000` whose
# argv[0] carries "@MARKER@"). The process limit must stop it early; more than 100 started
# prints a "BREACH processes:" line. Whatever started must be gone after the submission.
# The solution is otherwise untouched: honest score 100.
import os as _os
import shutil as _shutil

_SLEEP = _shutil.which("sleep") or "/bin/sleep"
_started = 0
for _ in range(300):
    try:
        _os.posix_spawn(_SLEEP, [f"@MARKER@-flood", "1000"], {})
    except OSError:
        break
    _started += 1
print(f"fork flood: {_started} processes started")
if _started > 100:
    print(f"BREACH processes: {_started} processes started, the process limit did not hold")
