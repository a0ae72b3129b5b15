"""The isolated backend: student code runs in the sandboxed worker, never in the grader.

A ``Worker`` owns one started worker process (see ``grader.sandbox.worker``) and asks it for one
child per submission. ``IsolatedBackend`` is the ``Backend`` of one submission: it sends
each call over the child's private socket, waits at most ``call_timeout`` seconds for the
reply, and turns a timeout, a crash or a malformed reply into an ``ErrorDescription``.
When a child dies or is killed, the next call gets a fresh child, so one endless loop or
one ``os._exit`` costs only the tests that reached it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import socket
import threading
import time
import tokenize
from pathlib import Path
from typing import Any

from grader import untrusted
from grader.feedback.errors import ErrorDescription
from grader.sandbox import processes, wire

logger = logging.getLogger("grader.sandbox")

OUTPUT_KEPT_BYTES = 10_000
WORKER_START_TIMEOUT = 120.0
# Wall-clock seconds for one submission, from its import to its last call (the grader's own
# work included), and for its diagnosis within them: past either, what remains scores 0 (the
# diagnosis is only dropped) and results.json records why (SubmissionResult.time_budget).
SUBMISSION_BUDGET_SECONDS = 120.0
DIAGNOSIS_BUDGET_SECONDS = 10.0


class WorkerUnavailable(RuntimeError):
    """The worker could not be started: the grader itself cannot run."""


class CapturedOutput:
    """Drains a child's stdout/stderr so it never blocks, keeping only the first 10 kB."""

    def __init__(self, pipe: socket.socket) -> None:
        self.kept = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe: socket.socket) -> None:
        with pipe:
            while chunk := pipe.recv(65536):
                self.total += len(chunk)
                room = OUTPUT_KEPT_BYTES - len(self.kept)
                if room > 0:
                    self.kept.extend(chunk[:room])

    def text(self, wait: float = 1.0) -> str:
        self._thread.join(wait)
        text = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            text += f"\n[... {self.total - len(self.kept)} more bytes of output not kept]"
        return text


class Worker:
    """One sandboxed worker process; started lazily, restarted when it dies."""

    def __init__(self, sandbox: str, limits: processes.Limits | None = None) -> None:
        self.sandbox = sandbox
        self.limits = limits or processes.Limits()
        self.restarts = 0
        # Seconds the grader waited on student code (imports and calls), all submissions
        # together: the shard's log reports it, the batch benchmark reads it.
        self.seconds_in_student_code = 0.0
        # Started now, waited for at the first submission: the worker imports torch while
        # pytest collects the tests (two cores, two start-ups at once).
        self._process: processes.WorkerProcess | None = processes.WorkerProcess(sandbox, self.limits)
        self._ready = False

    def _ensure_started(self) -> processes.WorkerProcess:
        if self._process is not None and self._process.process.poll() is None and self._ready:
            return self._process
        if self._process is not None and not self._ready and self._process.process.poll() is None:
            process = self._process  # started in __init__, not yet heard from
        else:
            if self._process is not None:
                self._process.kill()
            # Every worker after the first, whether the last one died or was ended.
            self.restarts += 1
            process = processes.WorkerProcess(self.sandbox, self.limits)
        self._ready = False
        process.control.settimeout(WORKER_START_TIMEOUT)
        try:
            ready = wire.receive(process.control)
        except (wire.ChannelClosed, wire.BadMessage, TimeoutError) as error:
            said = _tail(process.module_folder / "worker.log")
            process.kill()
            raise WorkerUnavailable(f"the {self.sandbox} worker did not start: {error}{said}") from None
        if not (isinstance(ready, dict) and ready.get("event") == "ready"):
            process.kill()
            raise WorkerUnavailable(f"the {self.sandbox} worker sent {ready!r} instead of ready")
        self._process = process
        self._ready = True
        return process

    def wait_until_ready(self) -> None:
        """Start the worker, or wait for the one starting, until it can spawn a child."""
        self._ensure_started()

    def spawn(
        self, source_text: str, filename: str, encoding: str = "utf-8", cells: list[tuple[int, int]] | None = None,
    ) -> tuple[socket.socket, CapturedOutput]:
        """A fresh child for one submission: its call channel and its captured output. With
        ``cells`` (a notebook's), the child runs them one by one (grader.reading.loading.run_cells)."""
        process = self._ensure_started()
        grader_end, child_end = socket.socketpair()
        output_read, output_write = socket.socketpair()
        try:
            socket.send_fds(process.control, [b"S"], [child_end.fileno(), output_write.fileno()])
            spawn = {"source": source_text, "filename": filename, "encoding": encoding}
            if cells is not None:
                spawn["cells"] = [list(cell) for cell in cells]
            wire.send(process.control, spawn)
        except (OSError, wire.ChannelClosed):
            self._process.kill()
            self._process = None
            raise
        finally:
            child_end.close()
            output_write.close()
        return grader_end, CapturedOutput(output_read)

    def end_child(self, kill: bool = True) -> dict:
        """Kill the current child (or wait for its death) and return how it ended."""
        process = self._process
        if process is None:
            return {}
        try:
            if kill:
                process.control.sendall(b"K")
            process.control.settimeout(30)
            event = wire.receive(process.control)
        except (OSError, wire.ChannelClosed, wire.BadMessage):
            # The worker itself is gone or stuck: end it; the next spawn starts a new one.
            process.kill()
            self._process = None
            return {}
        event = event if isinstance(event, dict) else {}
        if event.get("left_behind"):
            # The worker could not remove all the child wrote: the next student gets a fresh
            # worker and folder, never this one's leftovers (nor their weight on its disk budget).
            logger.warning(
                "the %s worker could not clean up after a submission (%s); starting a fresh one",
                self.sandbox, untrusted.printable(str(event["left_behind"])),
            )
            process.kill()
            self._process = None
        return event

    def close(self) -> None:
        if self._process is not None:
            try:
                self._process.control.sendall(b"Q")
            except OSError:
                pass
            self._process.kill()
            self._process = None


SHARED_WORKER_PLUGIN = "grader-shared-worker"


class SharedWorker:
    """One worker for several pytest sessions in one process (a batch shard, grader/batch/shard.py).

    Passed to ``pytest.main(plugins=[...])``; grader/session/sandbox.py takes its worker from
    here when it is registered, and leaves closing it to whoever made it.
    """

    def __init__(self) -> None:
        self.__name__ = SHARED_WORKER_PLUGIN  # pytest registers a plugin object under its __name__
        self.worker: Worker | None = None

    def get(self, sandbox: str) -> Worker:
        if self.worker is None:
            self.worker = Worker(sandbox)
        return self.worker

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()


def _read_python(source: Path) -> tuple[str, str]:
    """The source's text and encoding, as Python reads them (UTF-8, or a PEP 263 coding line's
    encoding): the child writes the text back in that encoding, so its coding line holds."""
    try:
        with tokenize.open(source) as stream:
            return stream.read(), stream.encoding
    except (SyntaxError, UnicodeDecodeError, LookupError):  # Python would refuse it too: it will say why
        return source.read_text(encoding="utf-8", errors="replace"), "utf-8"


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return ("; it said: " + " | ".join(lines[-3:])) if lines else ""


def _timed_out(seconds: float, during: str) -> str:
    """What a call past its limit is known to mean, and no more: a slow import is not known to
    be a loop (a training run or a large computation at the top level looks the same)."""
    if during == "import":
        return (
            f"timed out after {seconds:g} s during import: the code at the top level of the file (what runs "
            "when it is imported) did not finish. Code that only demonstrates or trains belongs under "
            '`if __name__ == "__main__":`, which the grader does not run.'
        )
    return (
        f"timed out after {seconds:g} s during {during}: the code did not finish. "
        "Look for a loop whose condition never changes."
    )


def describe_exit(event: dict, during: str) -> ErrorDescription:
    if "disk" in event:
        text = f"the submission's process was ended during {during}: {event['disk']}"  # its own sentence (folders.py)
    elif "signal" in event:
        number = event["signal"]
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        meaning = {
            "SIGKILL": " (killed: memory or process limit, or stopped by the grader)",
            "SIGXCPU": " (CPU time limit exceeded)",
            "SIGXFSZ": " (file size limit exceeded)",
            "SIGSEGV": " (crashed)",
        }.get(name, "")
        text = f"the submission's process was ended by {name}{meaning} during {during}"
    elif "status" in event:
        text = f"the submission's process exited with status {event['status']} during {during}"
    else:
        text = f"the submission's process stopped during {during}"
    return ErrorDescription("crashed", "ProcessExited", text)


class IsolatedBackend:
    """The ``Backend`` of one submission when its code runs in the worker."""

    def __init__(
        self, source: Path, worker: Worker, call_timeout: float = 5.0,
        budget_seconds: float = SUBMISSION_BUDGET_SECONDS, diagnosis_seconds: float = DIAGNOSIS_BUDGET_SECONDS,
        cells: list[tuple[int, int]] | None = None,
    ) -> None:
        self.source = source
        # A notebook's cells (first and last line of each in the file), run one by one as a
        # kernel runs them; None for a .py file, imported whole.
        self.cells = cells
        self.cell_failures: list[tuple[int, ErrorDescription]] = []
        self.source_text, self.encoding = _read_python(source)
        self.worker = worker
        self.call_timeout = call_timeout
        self.budget_seconds = budget_seconds
        self.diagnosis_seconds = diagnosis_seconds
        self.spent_seconds = 0.0
        self.channel: socket.socket | None = None
        self.outputs: list[CapturedOutput] = []
        # The submission's wall-clock budget runs from its import (open) to its last call,
        # the grader's own work between calls included; a stage (the diagnosis) may end sooner.
        self._ends_at = math.inf
        self._stage: tuple[float, str] | None = None  # (when it ends, what ran out then)
        self.ran_out: dict[str, str] = {}  # "submission" / "diagnosis" -> the reason, once reached

    def _start_child(self) -> ErrorDescription | None:
        self.channel, output = self.worker.spawn(self.source_text, self.source.name, self.encoding, self.cells)
        self.outputs.append(output)
        # How long the import may take. A .py file's top level only defines: an honest import
        # takes milliseconds, so the per-call limit is a thousandfold margin whatever the load.
        # A notebook runs its cells as a kernel does (experiments, a toy model trained for a few
        # seconds): they have the submission's budget, a wall-clock limit that load cannot cross
        # (an honest notebook's cells and all the checks take a few seconds, the budget minutes),
        # while the child's CPU limit (Limits.cpu_seconds, RLIMIT_CPU) still ends an endless loop.
        reply, error = self._exchange(None, "import", None if self.cells is None else math.inf)
        if error is not None:
            return ErrorDescription("import", error.type_name, error.message, error.location)
        if isinstance(reply, dict) and "import_error" in reply:
            return ErrorDescription.from_dict(reply["import_error"])
        if isinstance(reply, dict) and isinstance(reply.get("cell_failures"), list):
            self.cell_failures = [
                (failure["first_line"], ErrorDescription.from_dict(failure["error"]))
                for failure in reply["cell_failures"][:1000]
                if isinstance(failure, dict) and type(failure.get("first_line")) is int and isinstance(failure.get("error"), dict)
            ]
        return None

    def open(self) -> ErrorDescription | None:
        # The budget is the submission's: it starts once the worker is ready. The worker's own
        # start-up (importing torch, seconds on a loaded machine) once cost the first student of
        # a shard its budget, at import, on a busy machine only.
        self.worker.wait_until_ready()
        self._ends_at = time.monotonic() + self.budget_seconds
        return self._start_child()

    @contextlib.contextmanager
    def diagnosis_budget(self):
        """The diagnosis's calls share a budget of their own (within the submission's): past
        it, each is refused at once, and ``ran_out["diagnosis"]`` says so."""
        self._stage = (time.monotonic() + self.diagnosis_seconds, "diagnosis")
        try:
            yield
        finally:
            self._stage = None

    def _limit(self) -> tuple[float, str]:
        """When the current calls must end, and which budget ends them."""
        if self._stage is not None and self._stage[0] < self._ends_at:
            return self._stage
        return self._ends_at, "submission"

    def _run_out(self, which: str, during: str) -> ErrorDescription:
        seconds = self.diagnosis_seconds if which == "diagnosis" else self.budget_seconds
        reason = f"the {which}'s {seconds:g} s budget ran out (at {during})"
        self.ran_out.setdefault(which, reason)
        return ErrorDescription("timeout", "BudgetExhausted", f"not run: {reason}; what remains scores 0")

    def call(self, operation: str, **arguments: Any) -> tuple[Any, ErrorDescription | None]:
        ends_at, which = self._limit()
        if time.monotonic() >= ends_at:
            return None, self._run_out(which, operation)
        if self.channel is None:
            failure = self._start_child()  # the previous child died: a fresh one, freshly imported
            if failure is not None:
                return None, failure
        reply, error = self._exchange({"operation": operation, "arguments": arguments}, operation)
        if error is not None:
            return None, error
        if not isinstance(reply, dict) or not ("result" in reply or "error" in reply):
            self._discard_child(kill=True)
            return None, ErrorDescription("contract", "BadReply", f"{operation}: the submission's process replied out of turn")
        if "error" in reply:
            return None, ErrorDescription.from_dict(reply["error"] if isinstance(reply["error"], dict) else {})
        return reply["result"], None

    def _exchange(self, request: dict | None, during: str, seconds: float | None = None) -> tuple[Any, ErrorDescription | None]:
        """Send ``request`` (None: only read) and wait for the reply within the time limit
        (``seconds``, else the per-call limit; either way within the budgets)."""
        started = time.monotonic()
        ends_at, which = self._limit()
        seconds = self.call_timeout if seconds is None else seconds
        try:
            self.channel.settimeout(min(seconds, max(ends_at - started, 0.001)))
            if request is not None:
                wire.send(self.channel, request)
            # One deadline for the whole reply: a child dripping a byte at a time cannot stretch it.
            reply = wire.receive(self.channel, deadline=min(started + seconds, ends_at))
        except TimeoutError:
            self._discard_child(kill=True)
            if ends_at < started + seconds:  # a budget ended it, not the call's own limit
                return None, self._run_out(which, during)
            return None, ErrorDescription("timeout", "Timeout", _timed_out(seconds, during))
        except wire.ChannelClosed:
            event = self._discard_child(kill=True)  # harmless if it is already dead
            return None, describe_exit(event, during)
        except wire.BadMessage as error:
            self._discard_child(kill=True)
            # Nothing of it is used (its framing is lost with it): this call scores as failed,
            # and the next one gets a fresh child.
            return None, ErrorDescription(
                "contract", "BadReply", f"the submission's process sent a malformed reply during {during}: {error}"
            )
        finally:
            elapsed = time.monotonic() - started
            self.spent_seconds += elapsed
            self.worker.seconds_in_student_code += elapsed
        return reply, None

    def _discard_child(self, kill: bool) -> dict:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        return self.worker.end_child(kill=kill)

    def abort(self) -> None:
        """The grader gave up on a call (its own time limit): the child must not linger."""
        self._discard_child(kill=True)

    def close(self) -> None:
        if self.channel is not None:
            self._discard_child(kill=True)

    def captured_output(self) -> str:
        return "\n".join(output.text() for output in self.outputs if output.total)[: OUTPUT_KEPT_BYTES + 200]
