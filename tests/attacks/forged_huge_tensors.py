# ATTACK: rewrite the child's own encoder so that every tensor's header announces 1 GiB
# (float32 of shape 256 x 1024 x 1024) with a body of 20 bytes. A grader that allocates what a
# header announces before checking its bytes is pushed out of memory (the kernel kills the
# whole grading shard, and every student still waiting in it). The grader's peak memory must
# stay near its baseline, and the score no higher than that of honest zeros.
import sys as _sys

_wire = _sys.modules["grader.sandbox.wire"]
_honest_flatten = _wire._flatten


def _huge_tensors(value, blobs):
    if type(value) is torch.Tensor:
        blobs.append(b"\0" * 20)
        return {"__tensor__": "float32", "shape": [256, 1024, 1024], "bytes": 0}
    return _honest_flatten(value, blobs)


_wire._flatten = _huge_tensors
