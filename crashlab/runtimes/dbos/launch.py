"""DBOS launched over a run's SQLite database, as DBOS's rows and Pydantic AI's durable rows both run it.

Imported only by those two runtimes' loops, which are the only modules that need DBOS installed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import dbos._sys_db_sqlite  # noqa: F401 (imported here, in the warm parent, not by each launch in a forked process)
import sqlalchemy as sa
from dbos import DBOS, DBOSConfig, SetWorkflowID
from dbos._dbos import _get_or_create_dbos_registry
from dbos._logger import dbos_logger

#: Seconds between looks of DBOS's internal queue, where recovery puts a pending workflow.
RECOVERY_POLL = 0.01

#: The database the next connection of ENGINE opens: the run's, set by `launch`.
_database: Path | None = None

#: The system database engine of every launch in this process, and in each process forked from it. SQLAlchemy
#: keeps the statements it has compiled in its engine, so the engine DBOS makes anew at each launch compiled its
#: statements again in every process a sweep forks (33 a process, on the DBOS sweep), about a third of a
#: restart's CPU. This one is made and warmed (`warm_engine`) once, in the warm parent, where each process
#: forked from it finds all but 4 of them compiled; each launch points its connections at the run's database.
#: (Made here, it also imports SQLAlchemy's SQLite dialect in the parent, which was a third of a launch's time.)
ENGINE = sa.create_engine("sqlite:///dbos.sqlite")  # a file's URL, for a file's pool: the file is the run's


@sa.event.listens_for(ENGINE, "do_connect")
def _to_this_run(dialect: Any, record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
    assert _database is not None, "DBOS's engine connected before a launch named the run's database"
    cargs[0] = str(_database)


@sa.event.listens_for(ENGINE, "connect")
def _as_dbos_connects(connection: Any, record: Any) -> None:
    """Each connection set up as DBOS sets up those of the engine it makes for SQLite (immediate transactions,
    a long busy timeout, foreign keys): `tests/test_dbos.py` holds the two alike."""
    connection.isolation_level = "IMMEDIATE"
    connection.execute("PRAGMA busy_timeout=30000")
    connection.execute("PRAGMA foreign_keys=ON")


def launch(database: Path, listen_every: float | None = None) -> None:
    """DBOS over `database`, launched: a pending workflow's recovery starts in the background, as after any crash."""
    global _database
    _database = database
    ENGINE.dispose(close=False)  # a connection pooled before a fork is the parent's: this process opens its own
    # A step that fails under a fault is the scenario's outcome, which the harness tells; DBOS logging
    # each one's traceback too would bury a sweep's output.
    # The application version is named, not computed: DBOS hashes the source of every workflow this process
    # has registered, and recovers only the workflows of its own version. A restart in another process (a
    # Dask worker that also ran Pydantic AI's rows, restarting from a copy made here) would find the
    # workflow of another version and wait for ever.
    config: DBOSConfig = {"name": "crashlab", "system_database_url": f"sqlite:///{database}",
                          "application_version": "crashlab", "system_database_engine": ENGINE, "log_level": "CRITICAL"}
    if listen_every is not None:  # seconds between looks of DBOS's notification listener: 1 by default
        config["notification_listener_polling_interval_sec"] = listen_every
    DBOS(config=config)
    # Recovery puts a pending workflow on DBOS's internal queue, which a thread polls once a second
    # (DEFAULT_QUEUE_POLLING_INTERVAL_SEC): every restart waited about a second for it to start. DBOS has
    # a setting for its Kafka queues' interval, none for this one, so it is set on the queue itself: the
    # interval is how soon a worker looks, and changes nothing of what it does.
    _get_or_create_dbos_registry().get_internal_queue()._polling_interval_sec = RECOVERY_POLL
    DBOS.launch()


@DBOS.step()
def _warm_step() -> int:
    return 1


@DBOS.workflow()
def _warm_workflow() -> int:
    return _warm_step()


_warmed = False


def warm_engine() -> None:
    """Launch DBOS here once, over a scratch database, and run a workflow of one step to its end, then shut DBOS
    down: ENGINE's cache then holds what a launch, a workflow and its steps compile, for every process forked
    from here (a restart's recovery compiles 4 more statements of its own). About 0.1 s, once."""
    global _warmed
    if _warmed:
        return
    handlers = list(dbos_logger.handlers)
    with tempfile.TemporaryDirectory(prefix="crashlab-dbos-") as scratch:
        # DBOS's shutdown waits for its notification listener to look again: a second, by default.
        launch(Path(scratch) / "dbos.sqlite", listen_every=0.01)
        try:
            with SetWorkflowID("warm"):
                DBOS.start_workflow(_warm_workflow).get_result()
            DBOS.get_workflow_status("warm")
            DBOS.retrieve_workflow("warm").get_result(polling_interval_sec=0.01)
        finally:  # no thread of DBOS's may run on in a process that forks
            DBOS.destroy()
            ENGINE.dispose()
            # DBOS's first launch in a process gives its logger a handler on sys.stderr as it is then, and each
            # launch flushes it: made here, it would hold a stream that may be closed by the time a process
            # forked from here launches (pytest's captured output of an earlier test did).
            for handler in set(dbos_logger.handlers) - set(handlers):
                dbos_logger.removeHandler(handler)
    _warmed = True
