# ATTACK: allocate 20 GB in AttentionHead.forward, touching every page (256 MB at a time),
# once per process. The memory limit must stop it long before the machine suffers: should
# the machine's available memory drop under 3 GB the bomb stops itself and prints a
# "BREACH memory:" line instead of taking the machine down.
# Honest score: that of a head that is not written.
from pathlib import Path as _Path

_CHUNK_FLOATS = 64 * 1024**2  # 256 MB of float32
_exploded = False


def _available_bytes():
    for line in _Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _bomb(self, inputs, allowed_mask):
    global _exploded
    if not _exploded:
        _exploded = True
        hoard = []
        for _ in range(80):  # 80 x 256 MB = 20 GB
            if _available_bytes() < 3 * 1024**3:
                print(f"BREACH memory: {len(hoard) / 4:g} GB allocated and the limit has not stopped it")
                break
            hoard.append(torch.ones(_CHUNK_FLOATS))
        else:
            print("BREACH memory: allocated all 20 GB")
    raise NotImplementedError("AttentionHead.forward is not written yet")


AttentionHead.forward = _bomb
