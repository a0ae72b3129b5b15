# ATTACK: os._exit(0) at import. In-process, pytest would end with status 0 and no report.
# Honest score: 0 (the file never finishes importing).
import os as _os

_os._exit(0)
