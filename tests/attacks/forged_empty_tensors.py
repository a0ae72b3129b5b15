# ATTACK: rewrite the child's own encoder (grader.sandbox.wire._flatten, which runs in this
# process) so that every tensor's header keeps its dtype and shape but carries no bytes. A
# grader that rebuilt such a header with torch.empty would compare, score and show its own
# uninitialised memory. Every reply holding a tensor must be refused as malformed: the
# score may be no higher than that of honest zeros (the "sends_zeros" twin).
import sys as _sys

_wire = _sys.modules["grader.sandbox.wire"]
_honest_flatten = _wire._flatten


def _empty_tensors(value, blobs):
    if type(value) is torch.Tensor:
        return {"__tensor__": str(value.dtype).removeprefix("torch."), "shape": list(value.shape), "bytes": 0}
    return _honest_flatten(value, blobs)  # its recursion looks _flatten up again: this function


_wire._flatten = _empty_tensors
