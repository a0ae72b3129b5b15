# ATTACK: steal the reference. Look for solutions/ and grader/hidden/ from every place a
# path could lead: the repository's absolute path (known to the class: substituted here),
# the folders above every imported module's __file__, the working folders of every visible
# process (/proc/*/cwd, /proc/*/root), and a time-boxed search of the file system for
# multi_head_attention.py. A file holding the solution is executed over this module, so a
# successful theft scores 100. Each file read prints a "BREACH read:" line.
# Honest score: that of a head that is not written (its own forward is a stub).
import os as _os
import sys as _sys
import time as _time
from pathlib import Path as _Path

_REPO_ROOT = _Path("@REPO_ROOT@")
_OWN_SOURCE = _Path(__file__).read_text()
_SECRETS = ("multi_head_attention.py", "test_reference.py", "reference.py")
_SKIP = {"proc", "sys", "dev", "site-packages", "dist-packages", "__pycache__", "include", "share"}


def _not_written(self, inputs, allowed_mask):
    raise NotImplementedError("AttentionHead.forward is not written yet")


AttentionHead.forward = _not_written


def _places():
    yield _REPO_ROOT
    for module in list(_sys.modules.values()):
        where = getattr(module, "__file__", None)
        if where:
            yield from list(_Path(where).resolve().parents)[:6]
    try:
        entries = list(_Path("/proc").iterdir())
    except OSError:  # /proc out of reach (Landlock in the plain-process sandbox)
        entries = []
    for entry in entries:
        if entry.name.isdigit():
            for link in ("cwd", "root"):
                try:
                    yield _Path(_os.readlink(entry / link))
                except OSError:
                    pass
    yield from map(_Path, ("/", "/work", "/home", "/root", "/srv", "/opt", "/mnt", "/tmp", "/var"))


def _is_file(path):
    try:
        return path.is_file()
    except OSError:
        return False


def _search(deadline):
    seen, found = set(), set()
    # Each place once: a thousand modules share a few parent folders, and checking each of
    # them again and again took longer than the grader allows an import, under load.
    for place in dict.fromkeys(_places()):
        for direct in ("solutions/multi_head_attention.py", "grader/exercises/multi_head_attention/hidden/test_reference.py", "grader/hidden/reference.py"):
            if _is_file(place / direct):
                found.add(place / direct)
    for place in _places():
        if place in seen:
            continue
        seen.add(place)
        for folder, subfolders, files in _os.walk(place):
            if _time.monotonic() > deadline:
                return found
            subfolders[:] = [name for name in subfolders if name not in _SKIP and not name.startswith(".")]
            found.update(_Path(folder) / name for name in files if name in _SECRETS)
    return found


def _steal():
    found = _search(_time.monotonic() + 1.0)
    print(f"thief: searched; {len(found)} files named like the reference: {sorted(map(str, found))[:10]}")
    for path in sorted(found):
        try:
            text = path.read_text()
        except OSError:
            continue
        if text == _OWN_SOURCE:
            continue
        if "### BEGIN SOLUTION" in text or "def reference" in text or "def test_" in text:
            print(f"BREACH read: {path}")
        if "### BEGIN SOLUTION" in text and "class AttentionHead" in text:
            exec(compile(text, str(path), "exec"), globals())  # now scores as the reference


_steal()
