"""What one submission may write in total (grader/sandbox/processes.py, Limits.disk_bytes).

The per-file limit (16 MB) and the address-space limit do not bound files: a submission
writing 16 MB files one after another could fill the machine's memory through bubblewrap's
/tmp and /dev/shm (tmpfs), or its disk through the plain-process sandbox's folder. Under
bwrap both are tmpfs of a fixed size; in the plain-process sandbox the worker ends a child
that writes past its budget.
"""

from __future__ import annotations

import re

import pytest

from grader.sandbox import processes
from grading import REPO_ROOT, grade

SOLUTION = REPO_ROOT / "solutions" / "multi_head_attention.py"
LIMITS = processes.Limits()
CHUNK = 16 * 1024**2 - 1  # just under the per-file limit
ATTEMPTED_FILES = 24  # 384 MB per folder: far past the budget, had nothing stopped it

# Appended to the solution: writes 16 MB files into each folder until the writes fail, and
# prints how much each folder took. It catches the failure, so it imports and scores 100.
FILL = f'''
import os as _os


def _fill(folder):
    written = 0
    for index in range({ATTEMPTED_FILES}):
        try:
            with open(_os.path.join(folder, f"fill-{{index}}.bin"), "wb") as handle:
                handle.write(b"x" * {CHUNK})
            written += {CHUNK}
        except OSError:
            break
    print(f"filled {{folder}}: {{written}} bytes", flush=True)


for _folder in FOLDERS:
    _fill(_folder)
'''


def filled(output: str) -> dict[str, int]:
    return {folder: int(count) for folder, count in re.findall(r"filled (\S+): (\d+) bytes", output)}


needs_bwrap = pytest.mark.skipif(not processes.bwrap_available(), reason="bubblewrap cannot run here")


@needs_bwrap
def test_under_bwrap_tmp_and_dev_shm_hold_no_more_than_the_budget(tmp_path):
    path = tmp_path / "fills_tmpfs.py"
    path.write_text(SOLUTION.read_text() + '\nFOLDERS = ("/tmp", "/dev/shm")\n' + FILL)
    run = grade([path], tmp_path, "--isolate", "--sandbox", "bwrap")
    output = run.results["fills_tmpfs"]["output"]
    amounts = filled(output)
    assert set(amounts) == {"/tmp", "/dev/shm"}, output[-2000:]
    assert amounts["/tmp"] + amounts["/dev/shm"] <= LIMITS.disk_bytes, amounts
    assert amounts["/tmp"] > 0 and amounts["/dev/shm"] > 0
    assert run.score("fills_tmpfs") == 100  # a full disk is an error the code may catch, not a crash


def test_in_the_process_sandbox_a_child_writing_past_its_budget_is_ended(tmp_path):
    path = tmp_path / "fills_disk.py"
    path.write_text(SOLUTION.read_text() + '\nFOLDERS = (".",)\n' + FILL)
    run = grade([path], tmp_path, "--isolate", "--sandbox", "process")
    result = run.results["fills_disk"]
    assert f"wrote more than {LIMITS.disk_bytes // 2**20} MB of files" in result["import_error"], result["import_error"]
    assert result["score"] == 0
    # Ended while writing: it never got to write all it tried to.
    assert filled(result["output"]).get(".", 0) < ATTEMPTED_FILES * CHUNK


def test_a_file_in_a_declared_encoding_reaches_the_worker_as_python_reads_it(tmp_path):
    """``pytest grader --submission latin.py --isolate``: the worker's copy keeps the file's
    coding line and its encoding (it was once read as UTF-8 with replacement characters)."""
    path = tmp_path / "latin.py"
    check = '\nassert "\u00e9t\u00e9" == "\\u00e9t\\u00e9", "decoded wrongly"\n'
    path.write_bytes(("# -*- coding: latin-1 -*-\n" + SOLUTION.read_text() + check).encode("latin-1"))
    run = grade([path], tmp_path, "--isolate", "--sandbox", "process")
    assert run.score("latin") == 100, run.results["latin"]["import_error"]
