"""A sweep sent to a Dask cluster gives the output of a sweep run here, to the byte."""

import pytest

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster:
        yield cluster.scheduler_address


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--variant", "all"), ("--loop", "agent", "--depth", "3", "--job", "read-only")])
def test_a_sweep_on_a_cluster_is_the_sweep_run_here(cli, scheduler, args):
    here = cli("sweep", *args, "--format", "json", "--workers", "1")
    assert here[0] == 0
    assert cli("sweep", *args, "--format", "json", "--scheduler", scheduler) == here


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_named(cli):
    code, out, err = cli("sweep", "--scheduler", "tcp://127.0.0.1:9")
    assert (code, out) == (2, "") and "cannot reach the Dask scheduler 'tcp://127.0.0.1:9'" in err
