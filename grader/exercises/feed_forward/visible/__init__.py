"""The feed-forward exercise's visible checks: one module per group (``test_<group>.py``), shipped to students."""
