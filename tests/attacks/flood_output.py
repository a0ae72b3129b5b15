# ATTACK: print 5 MB on every forward pass of a head. The grader must keep only about 10 kB
# of it and go on grading. The solution is otherwise untouched: honest score 100.
_honest_forward = AttentionHead.forward
_FIVE_MEGABYTES = "flood " * (5 * 1024**2 // 6)


def _loud_forward(self, inputs, allowed_mask):
    print(_FIVE_MEGABYTES)
    return _honest_forward(self, inputs, allowed_mask)


AttentionHead.forward = _loud_forward
