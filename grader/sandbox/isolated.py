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
import re
import select
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
# Seconds the student's code may run for one submission, its import and all its calls together,
# and for its diagnosis's calls within them: past either, what remains scores 0 (the diagnosis is
# only dropped) and results.json records why (SubmissionResult.time_budget). Only the student's
# code runs on these clocks: the child says when it starts and stops (grader/student_clock.py),
# and the grader's own work in the child (reading what the code keeps, copying answers) and in
# this process (references, comparisons, pictures) is never counted against the student.
SUBMISSION_BUDGET_SECONDS = 120.0
DIAGNOSIS_BUDGET_SECONDS = 10.0
# The grader's own work in the child has allowances of its own, wall-clock seconds, per call and
# per submission: it takes milliseconds by design (grader/reading/state_kept.py's budget), so reaching one
# is the grader's fault, said as such in the log. They bound, too, what a child that forges the
# clock's messages (to hide its loop in the grader's time) can take.
GRADER_SECONDS_PER_CALL = 30.0
GRADER_SECONDS_PER_SUBMISSION = 120.0


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

    def __init__(self, sandbox: str, limits: processes.Limits | None = None, started: processes.WorkerProcess | None = None) -> None:
        """``started``: a worker process already starting, with the default limits (``limits`` None)."""
        self.sandbox = sandbox
        self.limits = limits or processes.Limits()
        self.restarts = 0
        # Seconds the student's code ran (imports and calls, as its child said: the grader's own
        # work in the child apart), and the grader's own work in the child, all submissions
        # together: the shard's log reports them, the batch benchmark reads them.
        self.seconds_in_student_code = 0.0
        self.seconds_of_grader_work_in_child = 0.0
        # Started now, waited for at the first submission: the worker imports torch while
        # pytest collects the tests (two cores, two start-ups at once).
        self._process: processes.WorkerProcess | None = started or processes.WorkerProcess(sandbox, self.limits)
        self._ready = False
        # A child told to end whose end the worker has not reported yet (``end_child(wait=False)``):
        # the worker kills it at once, then looks for leftovers and wipes its folders while the
        # grader writes the student's result; the report is read before the worker is asked
        # anything else (``_settle``).
        self._ending = False

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
    ) -> tuple[socket.socket, CapturedOutput, socket.socket]:
        """A fresh child for one submission: its call channel, its captured output and its clock's
        channel (grader/student_clock.py). With ``cells`` (a notebook's), the child runs them one by
        one (grader.reading.loading.run_cells)."""
        self._settle()  # the last child's end first: a worker it left unclean is replaced before this one
        process = self._ensure_started()
        grader_end, child_end = socket.socketpair()
        output_read, output_write = socket.socketpair()
        clock_read, clock_write = socket.socketpair()
        clock_read.setblocking(False)  # read when needed, never waited on
        try:
            socket.send_fds(process.control, [b"S"], [child_end.fileno(), output_write.fileno(), clock_write.fileno()])
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
            clock_write.close()
        return grader_end, CapturedOutput(output_read), clock_read

    def end_child(self, kill: bool = True, wait: bool = True) -> dict:
        """Kill the current child (or wait for its death) and return how it ended. ``wait`` False:
        only tell the worker to kill it, and return {}; how it ended is read later (``_settle``)."""
        process = self._process
        if process is None:
            return {}
        try:
            if kill and not self._ending:
                process.control.sendall(b"K")
            self._ending = True
            if not wait:
                return {}
            self._ending = False
            process.control.settimeout(30)
            event = wire.receive(process.control)
        except (OSError, wire.ChannelClosed, wire.BadMessage):
            # The worker itself is gone or stuck: end it; the next spawn starts a new one.
            self._ending = False
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

    def _settle(self) -> None:
        """Read the report of a child told to end without waiting (``end_child(wait=False)``)."""
        if self._ending:
            self.end_child(kill=False)

    def close(self) -> None:
        self._ending = False  # the worker is ended whole: its last child's report is not needed
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

    def __init__(self, started: processes.WorkerProcess | None = None) -> None:
        self.__name__ = SHARED_WORKER_PLUGIN  # pytest registers a plugin object under its __name__
        self.worker: Worker | None = None
        self.started = started  # a worker the shard started before its imports (grader/batch/shard.py)

    def get(self, sandbox: str) -> Worker:
        if self.worker is None:
            started, self.started = self.started, None
            if started is not None and started.sandbox != sandbox:
                started.kill()
                started = None
            self.worker = Worker(sandbox, started=started)
        return self.worker

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
        if self.started is not None:  # never taken: no session ran
            self.started.kill()


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


def _timed_out(seconds: float, during: str, function: str = "") -> str:
    """What a call past its limit is known to mean, and no more: a slow import is not known to
    be a loop (a training run or a large computation at the top level looks the same)."""
    if during == "import":
        return (
            f"timed out after {seconds:g} s during import: the code at the top level of the file (what runs "
            "when it is imported) did not finish. Code that only demonstrates or trains belongs under "
            '`if __name__ == "__main__":`, which the grader does not run.'
        )
    where = f"your {function} (during {during})" if function else during
    return (
        f"timed out after {seconds:g} s of your code's own time in {where}: it did not finish. "
        "Look for a loop whose condition never changes, or work that grows far faster than the input."
    )


def _grader_timed_out(during: str) -> str:
    return (
        f"not graded: the grader's own work during {during} did not finish in time. This is the grader's fault, "
        "not your code's: your instructor's log says so."
    )


# What a child may name as the student's function running: words of a Python name and the
# grader's own parentheses; anything else is said as "your code".
_FUNCTION_NAME = re.compile(r"[A-Za-z_][\w.]{0,80}( \([a-z' ]{1,40}\))?")


class _CallClock:
    """One call's time, split by the child's ticks into the student's code (``function``: which) and
    the grader's own work (``function`` None: it runs first), each against its limit. A tick's time
    is the child's word: it is held between the tick before and now, so a forged tick can move time
    from the student to the grader's allowance, never make more of it."""

    BYTES_READ = 1 << 16  # what one read takes of the ticks: a child sends a few dozen bytes a call

    def __init__(self, channel: socket.socket | None, student_limit: float, budget_left: float, grader_left: float) -> None:
        self.channel = channel
        self.student_limit = student_limit  # the call's own limit
        self.budget_left = budget_left  # what the budget still allows
        self.grader_left = grader_left
        self.student_seconds = 0.0  # of the stretches the ticks closed
        self.grader_seconds = 0.0
        self.function: str | None = None
        self.started = self._since = time.monotonic()
        self._pending = bytearray()

    def read(self) -> None:
        """Take in the ticks the child has sent so far."""
        if self.channel is None:
            return
        try:
            # One read takes all a call's ticks (a few dozen bytes); another only after a full one.
            while (chunk := self.channel.recv(self.BYTES_READ)):
                self._pending += chunk
                if len(chunk) < self.BYTES_READ or len(self._pending) >= self.BYTES_READ:
                    break
        except (BlockingIOError, InterruptedError):
            pass  # nothing more for now
        except OSError:
            return
        try:
            ticks = wire.read_ticks(self._pending)
        except wire.BadMessage:
            self.channel, ticks = None, []  # no tick is believed from then on: all its time is the student's
            self.function = self.function or "code"
        now = time.monotonic()
        for tick in ticks:
            at = min(max(tick.at, self._since), now) if tick.at == tick.at else self._since  # NaN: no time
            self._count(at - self._since)
            self._since = at
            self.function = (tick.function if _FUNCTION_NAME.fullmatch(tick.function) else "code") if tick.function else None

    def _count(self, seconds: float) -> None:
        if self.function is None:
            self.grader_seconds += seconds
        else:
            self.student_seconds += seconds

    def stop(self) -> None:
        """The call is over: the stretch still open is counted to whoever ran it."""
        now = time.monotonic()
        self._count(now - self._since)
        self._since = now

    def deadline(self) -> float:
        """When, at the latest, the ticks must be read again: the student's limit, or the grader's
        allowance, whichever the time since the last tick could reach first."""
        now = time.monotonic()
        open_stretch = now - self._since
        student_spent = self.student_seconds + (open_stretch if self.function is not None else 0.0)
        grader_spent = self.grader_seconds + (open_stretch if self.function is None else 0.0)
        student_left = min(self.student_limit, self.budget_left) - student_spent
        return now + max(min(student_left, self.grader_left - grader_spent), 0.0)

    def budget_ended_it(self) -> bool:
        return self.budget_left < self.student_limit and self.student_seconds >= self.budget_left


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
        self.spent_seconds = 0.0  # the student's code's, from its import on
        self.grader_seconds = 0.0  # the grader's own work in the child
        self.channel: socket.socket | None = None
        self.clock_channel: socket.socket | None = None  # the child's clock ticks (grader/student_clock.py)
        self.outputs: list[CapturedOutput] = []
        # A stage (the diagnosis) has a budget of its own within the submission's: (the student's
        # seconds spent when it began, its name).
        self._stage: tuple[float, str] | None = None
        self.ran_out: dict[str, str] = {}  # "submission" / "diagnosis" -> the reason, once reached

    def _start_child(self) -> ErrorDescription | None:
        self.channel, output, self.clock_channel = self.worker.spawn(self.source_text, self.source.name, self.encoding, self.cells)
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
        self.worker.wait_until_ready()  # the worker's own start-up is nobody's budget
        return self._start_child()

    @contextlib.contextmanager
    def diagnosis_budget(self):
        """The diagnosis's calls share a budget of their own (within the submission's): past
        it, each is refused at once, and ``ran_out["diagnosis"]`` says so."""
        self._stage = (self.spent_seconds, "diagnosis")
        try:
            yield
        finally:
            self._stage = None

    def _limit(self) -> tuple[float, str]:
        """The student's seconds left for the current calls, and which budget they are."""
        left = self.budget_seconds - self.spent_seconds
        if self._stage is not None:
            began, which = self._stage
            stage_left = self.diagnosis_seconds - (self.spent_seconds - began)
            if stage_left < left:
                return stage_left, which
        return left, "submission"

    def _run_out(self, which: str, during: str) -> ErrorDescription:
        seconds = self.diagnosis_seconds if which == "diagnosis" else self.budget_seconds
        reason = f"the {which}'s {seconds:g} s budget ran out (at {during})"
        self.ran_out.setdefault(which, reason)
        return ErrorDescription("timeout", "BudgetExhausted", f"not run: {reason}; what remains scores 0")

    def call(self, operation: str, **arguments: Any) -> tuple[Any, ErrorDescription | None]:
        left, which = self._limit()
        if left <= 0:
            return None, self._run_out(which, operation)
        if self.channel is None:
            failure = self._start_child()  # the previous child died: a fresh one, freshly imported
            if failure is not None:
                return None, failure
        reply, error = self._exchange({"operation": operation, "arguments": arguments}, operation)
        if error is not None:
            return None, error
        if not isinstance(reply, dict) or not ("result" in reply or "error" in reply):
            self._discard_child(kill=True, wait=False)
            return None, ErrorDescription("contract", "BadReply", f"{operation}: the submission's process replied out of turn")
        if "error" in reply:
            return None, ErrorDescription.from_dict(reply["error"] if isinstance(reply["error"], dict) else {})
        return reply["result"], None

    def _exchange(self, request: dict | None, during: str, seconds: float | None = None) -> tuple[Any, ErrorDescription | None]:
        """Send ``request`` (None: only read) and wait for the reply, the student's code within its
        limit (``seconds``, else the per-call limit; either way within the budgets) and the
        grader's own work in the child within its allowances. The child's clock ticks
        (grader/student_clock.py, ``ClockToGrader`` in grader/sandbox/worker.py) say which ran
        when: they are read when a limit may have been reached, and once the reply is in."""
        seconds = self.call_timeout if seconds is None else seconds
        budget_left, which = self._limit()
        clock = _CallClock(self.clock_channel, seconds, budget_left,
                           min(GRADER_SECONDS_PER_CALL, GRADER_SECONDS_PER_SUBMISSION - self.grader_seconds))
        try:
            self.channel.settimeout(max(clock.grader_left, 0.001))
            if request is not None:
                wire.send(self.channel, request)
            # Wait for the reply's first byte. At each deadline the ticks say whose time it was: while
            # the grader's own work took some of it, the student's limit is not reached and the wait goes
            # on. (Only before the reply begins: a wait ended within a message would lose its framing.)
            while not select.select([self.channel], [], [], max(clock.deadline() - time.monotonic(), 0.0))[0]:
                clock.read()
                if clock.deadline() <= time.monotonic():
                    raise TimeoutError("the call did not finish in time")
            # One deadline for the whole reply: a child dripping a byte at a time cannot stretch it.
            # (The ticks are read once the reply is in, or at a time-out, before it is judged: the
            # reply's deadline, reckoned from those read so far, is never more than a limit away.)
            reply = wire.receive(self.channel, deadline=clock.deadline())
            clock.read()
            clock.stop()
            return reply, None
        except TimeoutError:
            clock.read()
            clock.stop()
            self._discard_child(kill=True, wait=False)
            if clock.function is None:
                logger.warning("the grader's own work in the submission's process ran past its allowance during %s "
                               "(%.1f s in this call, %.1f s in all): the grader's fault, not the student's", during,
                               clock.grader_seconds, self.grader_seconds + clock.grader_seconds)
                return None, ErrorDescription("timeout", "GraderTimeout", _grader_timed_out(during))
            if clock.budget_ended_it():
                return None, self._run_out(which, during)
            return None, ErrorDescription("timeout", "Timeout", _timed_out(seconds, during, clock.function))
        except wire.ChannelClosed:
            event = self._discard_child(kill=True)  # harmless if it is already dead
            return None, describe_exit(event, during)
        except wire.BadMessage as error:
            self._discard_child(kill=True, wait=False)
            # Nothing of it is used (its framing is lost with it): this call scores as failed,
            # and the next one gets a fresh child.
            return None, ErrorDescription(
                "contract", "BadReply", f"the submission's process sent a malformed reply during {during}: {error}"
            )
        finally:
            self.spent_seconds += clock.student_seconds
            self.grader_seconds += clock.grader_seconds
            self.worker.seconds_in_student_code += clock.student_seconds
            self.worker.seconds_of_grader_work_in_child += clock.grader_seconds

    def _discard_child(self, kill: bool, wait: bool = True) -> dict:
        """End the child; ``wait``: for how it ended (only a child that died of itself needs it,
        to say why), else the worker reports it before its next child (``Worker._settle``)."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
            self.clock_channel.close()
            self.clock_channel = None
        return self.worker.end_child(kill=kill, wait=wait)

    def abort(self) -> None:
        """The grader gave up on a call (its own time limit): the child must not linger."""
        self._discard_child(kill=True, wait=False)

    def close(self) -> None:
        if self.channel is not None:
            self._discard_child(kill=True, wait=False)

    def captured_output(self) -> str:
        return "\n".join(output.text() for output in self.outputs if output.total)[: OUTPUT_KEPT_BYTES + 200]
