"""The retention sensor: the automation evaluations older than an hour are deleted, the younger ones kept (Dagster's own
purge keeps them 30 days), through the instance's schedule storage."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from pipelines.defs import retention
from pipelines.defs.retention import retention_sensor


@dg.asset(automation_condition=dg.AutomationCondition.eager())
def followed() -> None:
    return None


def test_evaluations_older_than_an_hour_are_deleted_and_younger_ones_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    assert retention.EVALUATIONS_KEPT_S == 3600
    with dg.instance_for_test() as instance:
        storage = instance.schedule_storage
        assert storage is not None
        (result,) = dg.evaluate_automation_conditions(defs=[followed], instance=instance).results
        for evaluation_id in (1, 2):  # as the daemon stores them, one per tick that changed the asset's evaluation
            storage.add_auto_materialize_asset_evaluations(evaluation_id, [result.serializable_evaluation.with_run_ids(set())])

        def kept() -> list[int]:
            return [r.evaluation_id for r in storage.get_auto_materialize_asset_evaluations(dg.AssetKey("followed"), limit=10)]

        assert kept() == [2, 1]
        context = dg.build_sensor_context(instance=instance)
        assert retention_sensor(context).skip_message == "deleted the automation evaluations older than 60 min"
        assert kept() == [2, 1]  # written just now
        now = time.time()
        monkeypatch.setattr(retention.time, "time", lambda: now + 3600 - 60)  # 59 min later: still kept
        retention_sensor(context)
        assert kept() == [2, 1]
        monkeypatch.setattr(retention.time, "time", lambda: now + 3600 + 60)  # 61 min later: gone
        retention_sensor(context)
        assert kept() == []


def test_the_sensor_runs_from_the_start_every_ten_minutes_and_launches_nothing() -> None:
    assert retention_sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert retention_sensor.minimum_interval_seconds == 600
    assert not retention_sensor.targets
