"""A sweep sent to a Dask cluster gives the output of a sweep run here, to the byte."""

import pytest

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("--variant", "all"), ("--loop", "agent", "--depth", "3", "--job", "read-only"),
    # Killed for real: each Dask worker forks the processes of its scenarios from its own warm process, and
    # restarts them from the copies a branch carries; DBOS's too, against a service each worker starts.
    ("--variant", "all", "--kill", "--depth", "1"), ("--loop", "dbos", "--kill", "--depth", "1"),
])
def test_a_sweep_on_a_cluster_is_the_sweep_run_here(cli, scheduler, args):
    here = cli("sweep", *args, "--format", "json", "--workers", "1")
    assert here[0] == 0
    assert cli("sweep", *args, "--format", "json", "--scheduler", scheduler) == here


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_named(cli):
    code, out, err = cli("sweep", "--scheduler", "tcp://127.0.0.1:9")
    assert (code, out) == (2, "") and "cannot reach the Dask scheduler 'tcp://127.0.0.1:9'" in err


@pytest.mark.slow
def test_a_dbos_restart_on_a_worker_recovers_the_workflow_a_process_of_more_workflows_copied(cli, scheduler):
    """The copies the restarts start from are made here, where Pydantic AI's DBOS workflows are registered too;
    the restarts run on Dask workers, where they are not. DBOS recovers only workflows of its own application
    version, which it computes from every workflow a process registered: a restart would wait for ever."""
    pytest.importorskip("pydantic_ai")
    import crashlab.runtimes.pydanticai.loop  # noqa: F401 (registers its workflows in this process)

    args = ("sweep", "--loop", "dbos", "--kill", "--depth", "1", "--format", "json", "--time-limit", "10")
    here = cli(*args, "--workers", "1")
    assert here[0] == 0
    assert cli(*args, "--scheduler", scheduler) == here
