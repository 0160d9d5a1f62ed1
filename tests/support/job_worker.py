"""``python -m tests.support.job_worker``: ``helpdesk worker`` plus the test job kinds."""

from __future__ import annotations

import sys

from api.settings import Settings
from api.worker import run_worker
from tests.support import jobkinds

if __name__ == "__main__":
    sys.exit(run_worker(Settings(), extra=[jobkinds.register]))
