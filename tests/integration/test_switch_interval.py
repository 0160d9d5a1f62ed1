"""A process's parts set the interpreter's switch interval from THREAD_SWITCH_INTERVAL_MS
while they run (api/root.py ``running``), and put the one before back at teardown; the
setting refuses values outside its range."""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from api.config import ProcessSettings
from api.root import ProcessRole, running
from tests.support import pg


def _settings(db: pg.TestDatabase, **values: object) -> ProcessSettings:
    return ProcessSettings(_env_file=None, database_url=db.runtime_url,  # type: ignore[call-arg]
                           db_pool_min=1, **values)


async def test_the_parts_run_with_the_switch_interval_and_put_it_back(
        db: pg.TestDatabase) -> None:
    before = sys.getswitchinterval()
    assert _settings(db).thread_switch_interval_ms == 0.5
    async with running(_settings(db, thread_switch_interval_ms=2.0), ProcessRole.CLI):
        assert sys.getswitchinterval() == pytest.approx(0.002)
    assert sys.getswitchinterval() == before


@pytest.mark.parametrize("value", [0.0, 0.01, 101.0])
def test_a_switch_interval_out_of_range_is_refused(db: pg.TestDatabase, value: float) -> None:
    with pytest.raises(ValidationError, match="thread_switch_interval_ms"):
        _settings(db, thread_switch_interval_ms=value)
