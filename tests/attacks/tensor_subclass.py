# ATTACK: return a torch.Tensor subclass whose __torch_function__ answers "equal" to every
# comparison, holding wrong numbers (zero output, uniform weights). The grader must reject it
# by type; under --isolate it cannot even be unpickled (torch.load(weights_only=True)).
# Honest score: that of a head that is not written.


class _AlwaysClose(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.allclose, torch.equal, torch.Tensor.equal):
            return True
        if func in (torch.isclose, torch.eq, torch.Tensor.__eq__, torch.Tensor.eq):
            return torch.ones(torch.as_tensor(args[0]).shape, dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs)


def _lying_forward(self, inputs, allowed_mask):
    batch, seq, _ = inputs.shape
    output = torch.zeros(batch, seq, self.head_dim, dtype=inputs.dtype)
    weights = torch.full((batch, seq, seq), 1.0 / seq, dtype=inputs.dtype)
    return HeadResult(output=output.as_subclass(_AlwaysClose), weights=weights.as_subclass(_AlwaysClose))


AttentionHead.forward = _lying_forward
