"""What never ships of the feed-forward exercise: its hidden group's checks (``test_reference.py``)
and its known mistakes (``mistakes.py``, solution code)."""
