"""Where student code runs when a score counts: the sandboxed worker and its walls.

* ``processes.py`` — the only module that starts processes: the worker under bubblewrap or
  as a plain process, and the batch's shards.
* ``worker.py``    — the warm worker: imports torch once, forks a child per submission.
* ``wire.py``      — the plain-data wire format between grader and worker (no pickle).
* ``landlock.py``  — the plain-process sandbox's file-system and network walls.
* ``libraries.py`` — what a class's files use (matplotlib, an optimiser) made ready once in the
  worker, for the children forked after.
* ``isolated.py``  — the grader's side: the backend behind ``Submission`` that talks to a worker.

Instructor-only: the student release grades in-process and ships without this folder.
Kept free of imports: the worker imports this package inside the sandbox.
"""
