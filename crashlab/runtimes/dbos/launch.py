"""DBOS launched over a run's SQLite database, as DBOS's rows and Pydantic AI's durable rows both run it.

Imported only by those two runtimes' loops, which are the only modules that need DBOS installed.
"""

from __future__ import annotations

from pathlib import Path

import dbos._sys_db_sqlite  # noqa: F401 (imported here, in the warm parent, not by each launch in a forked process)
import sqlalchemy.dialects.sqlite  # noqa: F401 (the same: about a third of a launch's time was these imports)
from dbos import DBOS
from dbos._dbos import _get_or_create_dbos_registry

#: Seconds between looks of DBOS's internal queue, where recovery puts a pending workflow.
RECOVERY_POLL = 0.01


def launch(database: Path) -> None:
    """DBOS over `database`, launched: a pending workflow's recovery starts in the background, as after any crash."""
    # A step that fails under a fault is the scenario's outcome, which the harness tells; DBOS logging
    # each one's traceback too would bury a sweep's output.
    # The application version is named, not computed: DBOS hashes the source of every workflow this process
    # has registered, and recovers only the workflows of its own version. A restart in another process (a
    # Dask worker that also ran Pydantic AI's rows, restarting from a copy made here) would find the
    # workflow of another version and wait for ever.
    DBOS(config={"name": "crashlab", "system_database_url": f"sqlite:///{database}", "application_version": "crashlab",
                 "run_admin_server": False, "log_level": "CRITICAL"})  # type: ignore[typeddict-unknown-key]
    # Recovery puts a pending workflow on DBOS's internal queue, which a thread polls once a second
    # (DEFAULT_QUEUE_POLLING_INTERVAL_SEC): every restart waited about a second for it to start. DBOS has
    # a setting for its Kafka queues' interval, none for this one, so it is set on the queue itself: the
    # interval is how soon a worker looks, and changes nothing of what it does.
    _get_or_create_dbos_registry().get_internal_queue()._polling_interval_sec = RECOVERY_POLL
    DBOS.launch()
