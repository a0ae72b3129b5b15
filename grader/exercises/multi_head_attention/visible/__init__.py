"""The visible checks of multi-head self-attention: one module per group (``test_<group>.py``),
each check's points on its ``@pytest.mark.points(n)`` marker. Shipped to students."""
