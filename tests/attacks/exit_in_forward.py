# ATTACK: os._exit(0) in the middle of a call: the process vanishes with a "success" status
# before the grader can compare anything. Honest score: that of a head that is not written.
import os as _os


def _exit_quietly(self, inputs, allowed_mask):
    _os._exit(0)


AttentionHead.forward = _exit_quietly
