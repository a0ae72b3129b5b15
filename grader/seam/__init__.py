"""The seam between the engine and the exercises it grades: the engine's side.

An exercise is a package of ``grader/exercises/`` with one declaration (``declaration.py``: its
name and title, the student's file and notebook, the functions in writing order, the groups
with which are hidden, where its operations and visible checks live). The engine reaches an
exercise only through that declaration, read by ``registry.py``: it never imports an exercise's
module by name nor names its functions, groups or files. What every exercise's checks and
operations share lives here too: the contract's errors (``contract_errors.py``) and a failed
check that carries a picture (``failing.py``). Shipped to students: part of the student's
grader; nothing here imports torch.
"""
