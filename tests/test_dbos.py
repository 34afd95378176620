"""The job as a DBOS workflow, killed for real at every point: a plain step runs twice, a keyed one cannot.

These need the `crashlab[dbos]` extra, which `make test` installs. DBOS runs a step at least once:
a kill after the step's effect and before DBOS recorded its output (the tracker's `accepted`)
makes recovery run it again, and nowhere else may a kill duplicate; keyed with DBOS's own workflow
and step IDs, no kill may duplicate or lose anything.
"""

import pytest

from crashlab.durable.fuse import unusable
from crashlab.errors import BadInput

from .helpers import same_sweep, sweep_family

pytestmark = pytest.mark.slow


def test_a_plain_dbos_step_runs_again_after_a_kill_between_its_effect_and_its_record_and_a_keyed_one_never(triage):
    plain, keyed = sweep_family("dbos", triage)
    assert plain.points == keyed.points and plain.flaky == keyed.flaky == 0
    assert {s.points[0] for s in plain.scenarios if s.outcome.dups} == {p for p in plain.points if p.startswith("accepted#")}
    assert plain.dups == len(triage.changing_calls) and plain.missing == 0
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


@pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")
def test_a_power_cut_after_dbos_recorded_a_step_takes_the_record_back_and_the_plain_step_runs_again(triage):
    """DBOS's SQLite system database commits by unlinking its journal (journal_mode=delete) with no directory
    sync after: a cut before the next transaction's sync brings the journal back, and the restart rolls the
    record of the step back. So the plain workflow duplicates at points where a kill alone cannot; keyed, the
    step's second run sends the same key."""
    from crashlab.faults.power_cut import PowerCut

    plain, keyed = sweep_family("dbos", triage, faults=[PowerCut.configured()])
    dying = {s.points[0] for s in plain.scenarios if s.outcome.dups}
    assert {p for p in plain.points if p.startswith("accepted#")} < dying
    assert {"step-recorded#1", "step#2"} <= dying
    # Two states at each of its 11 points: the crash's (3 duplicates, as the kill) and the cut's (8 more scenarios, 9).
    assert (len(plain.scenarios), plain.with_dups, plain.dups, plain.missing, plain.flaky) == (22, 11, 12, 0, 0)
    assert (keyed.dups, keyed.missing, keyed.failures()) == (0, 0, [])


def test_the_one_engine_of_every_launch_opens_the_runs_database_as_dbos_own_engine_would(tmp_path, monkeypatch):
    """crashlab hands DBOS one engine, warmed once in the parent, in place of the one DBOS makes at each launch
    (`launch.ENGINE`): its connections must open the run's database and be set up as DBOS's own, or a sweep
    would test another DBOS than its users run."""
    from dbos._sys_db_sqlite import SQLiteSystemDatabase

    from crashlab.runtimes.dbos import launch

    database = tmp_path / "dbos.sqlite"
    monkeypatch.setattr(launch, "_database", database)
    dbos_own = SQLiteSystemDatabase._create_engine(object.__new__(SQLiteSystemDatabase), f"sqlite:///{database}", {})

    def set_up(engine):
        with engine.connect() as connection:
            pragmas = [connection.exec_driver_sql(f"PRAGMA {p}").scalar()
                       for p in ("busy_timeout", "foreign_keys", "journal_mode", "synchronous")]
            opened = connection.exec_driver_sql("PRAGMA database_list").all()[0][2]
            return connection.connection.dbapi_connection.isolation_level, pragmas, opened, type(engine.pool)

    try:
        assert set_up(launch.ENGINE) == set_up(dbos_own) == ("IMMEDIATE", [30000, 1, "delete", 2], str(database),
                                                             type(dbos_own.pool))
    finally:
        launch.ENGINE.dispose()
        dbos_own.dispose()


def test_the_warm_up_leaves_dbos_logging_as_it_found_it(monkeypatch):
    """DBOS's logger, given a handler on the sys.stderr of the warm-up's time, would hold a stream that pytest (or
    anyone who redirects it) may have closed when a forked process launches DBOS, which flushes it and fails."""
    from dbos._logger import dbos_logger

    from crashlab.runtimes.dbos import launch

    monkeypatch.setattr(launch, "_warmed", False)
    before = list(dbos_logger.handlers)
    launch.warm_engine()
    assert dbos_logger.handlers == before


def test_sweep_loop_dbos_needs_kill(cli):
    code, out, err = cli("sweep", "--loop", "dbos")
    assert (code, out) == (2, "") and "dbos-plain runs only under the forked runner (--kill)" in err


def test_shared_a_dbos_sweep_is_the_re_executed_one_scenario_by_scenario(triage):
    """Restarted from copies of the run directory and of the service's rows, taken with the process stopped where
    its death would be, to depth 2: what re-executing every process from nothing gives. Equal states are equal
    content with DBOS's stamps left out (`STAMPS`), so far fewer restarts than scenarios."""
    for shared, replayed in zip(sweep_family("dbos", triage, depth=2, share=True),
                                sweep_family("dbos", triage, depth=2), strict=True):
        same_sweep(shared, replayed)
        assert shared.row().distinct < shared.row().scenarios / 3


def test_a_shared_dbos_sweep_that_did_not_put_the_services_rows_back_would_be_caught(triage, monkeypatch):
    """Not vacuous: a restart that found the service empty, not as the death left it, changes the counts."""
    from crashlab.runners.served import Outside

    monkeypatch.setattr(Outside, "load", lambda self, dumped: None)
    shared, replayed = (sweep_family("dbos", triage, slugs={"dbos-keyed"}, share=share)[0] for share in (True, False))
    with pytest.raises(AssertionError):
        same_sweep(shared, replayed)


def test_a_state_that_forgot_what_dbos_recorded_would_be_caught(triage, monkeypatch):
    """Not vacuous either: were the content of DBOS's database to leave out the steps it recorded, a death before
    DBOS recorded a step and one after would be one state, and the restart from one counted for the other. The
    shared sweep's merge check restarts from both and refuses the merge, naming the two deaths, before it counts."""
    from crashlab.durable import content

    tables = content.tables
    monkeypatch.setattr(content, "tables", lambda *args: [t for t in tables(*args) if t[0] != "operation_outputs"])
    with pytest.raises(BadInput, match=r"dbos-plain: the deaths at its points \d+ and \d+ leave states a shared sweep "
                                       "counts as one, but"):
        sweep_family("dbos", triage, slugs={"dbos-plain"}, share=True)
