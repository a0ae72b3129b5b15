# ATTACK: rewrite the child's own encoder (grader.sandbox.wire._flatten, which runs in this
# process) so that headers and bytes disagree: each tensor's honest bytes go out under a dtype
# of another size (float32 announced as float64, float64 as float32, int64 as int32), and a
# bool tensor is sent with bytes of 2 where it holds True (a byte torch's bool cannot hold).
# Every such reply must be refused as malformed, never reinterpreted.
import sys as _sys

_wire = _sys.modules["grader.sandbox.wire"]
_honest_flatten = _wire._flatten
_OTHER_SIZE = {torch.float32: "float64", torch.float64: "float32", torch.int64: "int32"}


def _mismatched(value, blobs):
    if type(value) is torch.Tensor:
        tensor = value.detach().contiguous()
        if tensor.dtype is torch.bool:
            raw, dtype = (tensor.to(torch.uint8) * 2).numpy().tobytes(), "bool"
        else:
            raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
            dtype = _OTHER_SIZE.get(tensor.dtype, str(tensor.dtype).removeprefix("torch."))
        blobs.append(raw)
        return {"__tensor__": dtype, "shape": list(tensor.shape), "bytes": len(raw)}
    return _honest_flatten(value, blobs)


_wire._flatten = _mismatched
