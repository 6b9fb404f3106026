"""Work side by side (`runtime.in_processes`): results in the order of the items, the
costliest started first when a cost is given, a failure raised in the parent; one job beside the
parent's own work (`ForkedJob`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench_assets.runtime import ForkedJob, WorkerFailed, in_processes


def _logged(log: Path):
    def job(item: str) -> str:
        with open(log, "a", encoding="utf-8") as f:  # appended whole: the children share the file
            f.write(f"{item} {os.getpid()}\n")
        return item.upper()

    return job


def test_the_costliest_start_first_and_results_keep_the_items_order(tmp_path):
    log = tmp_path / "started"
    costs = {"a": 1, "b": 1, "c": 5, "d": 3}
    out = list(in_processes(list(costs), _logged(log), 2, costs.__getitem__))
    assert out == ["A", "B", "C", "D"]
    started = [line.split()[0] for line in log.read_text().splitlines()]
    # c and d went first, together; a and b (equal costs) after them, in their order
    assert set(started[:2]) == {"c", "d"} and started[2:] == ["a", "b"]
    assert len({line.split()[1] for line in log.read_text().splitlines()}) == 4  # a child each


def test_without_a_cost_the_items_start_in_their_order(tmp_path):
    log = tmp_path / "started"
    assert list(in_processes(["x", "y", "z"], _logged(log), 1)) == ["X", "Y", "Z"]
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["x", "y", "z"]


def test_a_job_that_raises_is_raised_in_the_parent():
    def job(item: int) -> int:
        if item == 2:
            raise ValueError(f"item {item} is bad")
        return item

    with pytest.raises(ValueError, match="item 2 is bad"):
        list(in_processes([1, 2, 3], job, 2, lambda item: -item))


def test_a_forked_job_runs_beside_the_parent_and_answers_or_raises(tmp_path):
    marker = tmp_path / "child-was-here"
    job = ForkedJob(lambda: (marker.write_text(str(os.getpid())), os.getpid())[1])
    mine = os.getpid()  # the parent goes on meanwhile
    theirs = job.result()
    assert theirs != mine and marker.read_text() == str(theirs)

    def bad() -> None:
        raise KeyError("no such row")

    with pytest.raises(KeyError, match="no such row"):
        ForkedJob(bad).result()


def test_a_cancelled_forked_job_is_ended_and_has_no_answer():
    job = ForkedJob(lambda: __import__("time").sleep(30))
    job.cancel()
    with pytest.raises(WorkerFailed, match="ended before its answer"):
        job.result()
