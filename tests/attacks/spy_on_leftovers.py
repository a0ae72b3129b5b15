# ATTACK: graded after the others, look for what earlier submissions left behind: processes
# whose command line carries "@MARKER@", and files named after it in the shared writable
# places. Finding any would be a channel between students (or a way to tamper with a later
# submission). Each find prints "BREACH leftover-process:" or "BREACH leftover-file:".
# The solution is otherwise untouched: honest score 100.
import os as _os
from pathlib import Path as _Path

_MARKER = "@MARKER@"
try:
    _entries = list(_Path("/proc").iterdir())
except OSError:  # /proc out of reach (Landlock in the plain-process sandbox)
    _entries = []
    print("spy: /proc cannot be listed")
for _entry in _entries:
    if _entry.name.isdigit() and int(_entry.name) != _os.getpid():
        try:
            _command = (_entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if _MARKER in _command:
            print(f"BREACH leftover-process: {_entry.name} {_command}")
for _folder in ("/tmp", "/var/tmp", "/dev/shm", str(_Path.cwd().parent), str(_Path.home())):
    try:
        _names = _os.listdir(_folder)
    except OSError:
        continue
    for _name in _names:
        if _MARKER in _name:
            print(f"BREACH leftover-file: {_folder}/{_name}")
