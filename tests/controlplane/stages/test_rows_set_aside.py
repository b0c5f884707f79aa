"""What a heal set aside is known to every later check: a batch with a placeholder on a fifth of a feature's rows is
quarantined (the rows stay in the table as they came), and the next clean batch's run is CLEAN, names nothing in the
batch that passed, trains without those rows and is not held back by their open incident, with no command between."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd

from controlplane.pipeline import run_pipeline
from controlplane.spec import load_spec
from controlplane.stages.kept_reference import load_state, set_aside_rules
from controlplane.takeback.undo import undo
from controlplane.vocab import ChangedTable, Stage
from demo.story import land_batch
from tests.support import LATER, PIPELINE, incidents_on, ms

COLUMN = "prep_time_min"


def _land_with_placeholders(ws) -> int:
    spec = load_spec(ws, PIPELINE)
    before = pd.read_parquet(spec.data)["event_ts"].max()
    land_batch(ws, spec, seed=7, anchor=LATER, metres=False)
    table = pd.read_parquet(spec.data)
    chosen = table.index[table["event_ts"] > before][::5]
    table.loc[chosen, COLUMN] = -1.0
    table.to_parquet(spec.data, index=False, row_group_size=100_000)
    return len(chosen)


def test_rows_set_aside_are_left_out_of_the_next_clean_run_which_names_nothing_in_the_batch_that_passed(demo_copy):
    ws, _ = demo_copy
    placeholders = _land_with_placeholders(ws)
    healed = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(LATER + timedelta(minutes=5)))
    heal = healed.last_event(Stage.HEAL)
    assert heal is not None and f"{placeholders} row(s) quarantined" in heal.summary, healed.outcome
    (rule,) = set_aside_rules(ws, PIPELINE)
    assert (rule.column, rule.value, rule.kind) == (COLUMN, -1.0, "sentinel")
    assert rule.window is not None and rule.window.through_ms is not None  # later rows are the guard's to judge

    later = LATER + timedelta(days=5)
    land_batch(ws, load_spec(ws, PIPELINE), seed=8, anchor=later, metres=False)
    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(later + timedelta(minutes=5)))
    detect = record.last_event(Stage.DETECT)
    assert detect is not None and detect.status == "CLEAN", detect.summary
    trained = record.last_event(Stage.TRAIN)
    assert trained is not None and trained.status == "trained", record.outcome
    assert trained.evidence["rows_set_aside"] == placeholders
    assert record.status == "promoted", record.outcome  # the open incident does not stand against it
    states = [info.status.state for info in incidents_on(ws, load_spec(ws, PIPELINE).feature_table).values()]
    assert "ACTIVE" in states  # not corrected, only set aside: it stays open, not "cleared at the source"

    assert undo(ws, record.run_id).status == "undone"
    assert undo(ws, healed.run_id, changed=ChangedTable.KEEP).status == "undone"  # a batch landed since: kept
    state = load_state(ws, PIPELINE)
    assert state is not None and set_aside_rules(ws, PIPELINE) == ()  # taking the batch back takes its rule back


def test_labels_lost_on_rows_that_passed_earlier_are_set_aside_not_deleted_and_known_to_the_next_run(demo_copy):
    ws, _ = demo_copy
    spec = load_spec(ws, PIPELINE)
    land_batch(ws, spec, seed=7, anchor=LATER, metres=False)
    table = pd.read_parquet(spec.data)
    lost = table.index[::7]  # a join that lost the label of every seventh row, old batches included
    table.loc[lost, "eta_minutes"] = None
    table.to_parquet(spec.data, index=False, row_group_size=100_000)
    record = run_pipeline(ws, spec, now_ms=ms(LATER + timedelta(minutes=5)))
    verify = record.last_event(Stage.VERIFY)
    assert verify is not None and verify.status == "CLEAN", verify.summary if verify else record.outcome
    assert record.status == "promoted", record.outcome  # trained on the labelled rows
    published = pd.read_parquet(spec.data)
    assert len(published) == len(table) and int(published["eta_minutes"].isna().sum()) == len(lost)  # none deleted
    states = [info.status.state for info in incidents_on(ws, spec.feature_table).values()]
    assert "ACTIVE" in states  # the labels are not back: set aside, the incident stays open
    rules = set_aside_rules(ws, PIPELINE)
    assert rules and {(r.column, r.value, r.kind) for r in rules} == {("eta_minutes", None, "label_immature")}
    assert len(rules) > 1  # one per batch whose rows it reached: the earlier batches keep theirs too

    later = LATER + timedelta(days=5)
    land_batch(ws, spec, seed=8, anchor=later, metres=False)
    again = run_pipeline(ws, spec, now_ms=ms(later + timedelta(minutes=5)))
    detect = again.last_event(Stage.DETECT)
    assert detect is not None and detect.status == "CLEAN", detect.summary  # nothing found again in the old rows
    trained = again.last_event(Stage.TRAIN)
    assert trained is not None and trained.status == "trained", again.outcome

    assert undo(ws, again.run_id).status == "undone"
    assert undo(ws, record.run_id, changed=ChangedTable.KEEP).status == "undone"
    assert set_aside_rules(ws, PIPELINE) == ()  # the take-back puts back what each earlier batch held
