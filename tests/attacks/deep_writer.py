# ATTACK: write 320 MB, in files of just under 16 MB (the per-file limit), at the bottom of
# 25 nested folders of 200-character names: 5,000 characters deep, past PATH_MAX (4,096),
# where no path names the files. The disk budget (128 MiB in the plain-process sandbox)
# once measured by path and skipped what it could not stat: it never stopped this writer.
# Prints "deep writer: N bytes" after each file. Honest score: 0, ended with the
# disk-budget message (it catches a failed write, so a full tmpfs under bwrap leaves it 100).
import os as _os

_NAME = "n" * 200
_FILE_BYTES = 16 * 1024**2 - 1
_level = _os.open(".", _os.O_RDONLY | _os.O_DIRECTORY)
for _ in range(25):
    _os.mkdir(_NAME, dir_fd=_level)
    _below = _os.open(_NAME, _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=_level)
    _os.close(_level)
    _level = _below
_written = 0
for _index in range(20):
    try:
        _file = _os.open(f"fill-{_index}", _os.O_WRONLY | _os.O_CREAT, 0o600, dir_fd=_level)
        try:
            _os.write(_file, b"x" * _FILE_BYTES)
        finally:
            _os.close(_file)
    except OSError:
        break
    _written += _FILE_BYTES
    print(f"deep writer: {_written} bytes", flush=True)
_os.close(_level)
