# ATTACK: write files outside the submission's own folder, at import: /tmp, /var/tmp,
# /dev/shm, the repository, the real home folders, the folder above the working folder.
# Every file name carries "@MARKER@", so the test can look for them on the machine after
# the run. Each write that succeeds prints "WROTE <path>". The solution is otherwise
# untouched: honest score 100.
import os as _os
import pwd as _pwd
from pathlib import Path as _Path

_MARKER = "@MARKER@"
_REPO_ROOT = _Path("@REPO_ROOT@")
_folders = [_Path("/tmp"), _Path("/var/tmp"), _Path("/dev/shm"), _REPO_ROOT, _REPO_ROOT / "grader",
            _Path("/root"), _Path("/home"), _Path.cwd().parent, _Path("/")]
try:
    _folders.append(_Path(_pwd.getpwuid(_os.getuid()).pw_dir))
except KeyError:
    pass
for _folder in _folders:
    _target = _folder / f"{_MARKER}-written"
    try:
        _target.write_text("written by a submission\n")
        print(f"WROTE {_target}")
    except OSError:
        pass
