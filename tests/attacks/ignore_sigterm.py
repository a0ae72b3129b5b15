# ATTACK: ignore every signal that can be ignored (SIGTERM, SIGINT, SIGHUP, SIGALRM, ...)
# at import, then spin in AttentionHead.forward: only SIGKILL can end it.
# Honest score: that of a head that is not written.
import signal as _signal

for _name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGPIPE"):
    _signal.signal(getattr(_signal, _name), _signal.SIG_IGN)


def _spin(self, inputs, allowed_mask):
    while True:
        pass


AttentionHead.forward = _spin
