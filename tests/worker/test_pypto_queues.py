"""Which queues a worker consumes for its pypto, and refusing a queue of another pypto."""
from __future__ import annotations

import pytest

from jobqueue import parse_queue, queue_name, worker_queues
from runtime.devices.host import environment
from runtime.devices.pypto_api import REFERENCE_PYPTO
from server.commands.worker import celery_command
from worker import capabilities


def test_the_reference_pypto_also_serves_jobs_that_ask_for_no_version() -> None:
    assert worker_queues(["sim", "npu"], REFERENCE_PYPTO) == [f"sim@{REFERENCE_PYPTO}", f"npu@{REFERENCE_PYPTO}",
                                                              "sim", "npu"]


def test_another_pypto_serves_only_jobs_that_ask_for_it() -> None:
    assert worker_queues(["sim"], "0.3.0.dev0+gabc") == ["sim@0.3.0.dev0+gabc"]


def test_queue_names_round_trip() -> None:
    assert parse_queue(queue_name("npu", "0.3.0")) == ("npu", "0.3.0")
    assert parse_queue(queue_name("sim")) == ("sim", None)


def test_a_queue_of_another_pypto_is_refused() -> None:
    installed = environment().pypto
    capabilities.check_versions(["sim", f"sim@{installed}"])
    with pytest.raises(capabilities.WrongPypto, match=f"this worker has pypto {installed}, not 9.9.9"):
        capabilities.check_versions(["sim@9.9.9"])


def test_versioned_queues_on_the_command_line() -> None:
    cmd = celery_command(["sim@0.3.0.dev0", "npu@0.3.0.dev0"])
    assert cmd[cmd.index("-Q") + 1] == "sim@0.3.0.dev0,npu@0.3.0.dev0"
    assert cmd[cmd.index("--hostname") + 1] == "sim+npu@%h"
