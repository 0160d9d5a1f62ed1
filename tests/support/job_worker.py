"""``python -m tests.support.job_worker``: ``helpdesk worker`` plus the test job kinds."""

from __future__ import annotations

import sys

from api.cli.worker import run_worker
from api.config import ProcessSettings
from tests.support import jobkinds

if __name__ == "__main__":
    sys.exit(run_worker(ProcessSettings(), extra=[jobkinds.register]))
