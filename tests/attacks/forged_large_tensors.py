# ATTACK: rewrite the child's own encoder so that every tensor's header announces 16 MiB
# (float32 of shape 16 x 1024 x 256) with a body of 20 bytes: within the reply's byte limit
# once allocated, but many of them. A grader that allocated what a header announces took its
# shard from about 250 MiB to about 970 MiB this way. The grader's peak memory must stay near
# its baseline, and the score no higher than that of honest zeros.
import sys as _sys

_wire = _sys.modules["grader.sandbox.wire"]
_honest_flatten = _wire._flatten


def _large_tensors(value, blobs):
    if type(value) is torch.Tensor:
        blobs.append(b"\0" * 20)
        return {"__tensor__": "float32", "shape": [16, 1024, 256], "bytes": 0}
    return _honest_flatten(value, blobs)


_wire._flatten = _large_tensors
