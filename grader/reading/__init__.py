"""Reading a submission: which file holds the work, how a notebook's cells become code, and how
that code is loaded, all without running anything the student wrote until ``loading.py`` must.

``work_held.py`` chooses the file graded by what it holds (read with ``ast``, never run),
``notebooks.py`` turns a notebook into its code cells (the grader's own cells, magics and shell
lines left out, each cell's span kept so messages can name ``In [n]``), ``loading.py`` imports a
module or runs a notebook cell by cell as a kernel would, ``parser_limits.py`` says code nested too
deeply for Python's parser as a syntax error of the student's, and ``shadowing.py`` names a file of the
student's that would shadow a library before torch is imported. Part of the student's grader.
"""
