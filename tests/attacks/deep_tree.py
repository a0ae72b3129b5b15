# ATTACK (a careless one as much as a clever one): leave 1,200 nested empty folders in the
# working folder, within every stated limit (1,200 entries, no data). Made with directory
# descriptors, as a student's recursive helper would make them. The clean-up after it once
# recursed once per level (RecursionError), killed the plain-process worker and the shard
# with it: no later student got a result, and the leftover made the next batch fail at
# start-up. Prints "left N nested folders". The solution is otherwise untouched: honest
# score 100.
import os as _os

_LEVELS = 1200
_level = _os.open(".", _os.O_RDONLY | _os.O_DIRECTORY)
for _ in range(_LEVELS):
    _os.mkdir("d", dir_fd=_level)
    _below = _os.open("d", _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=_level)
    _os.close(_level)
    _level = _below
_os.close(_level)
print(f"left {_LEVELS} nested folders", flush=True)
