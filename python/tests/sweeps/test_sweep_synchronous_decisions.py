"""The decisions of synchronous rungs (gantry/sweeps/synchronous_rungs.py) on reported values
alone, without training: Hyperband's brackets are each textbook successive halving, whatever
order the trials reported in; no rung is decided while a trial could still reach it; and a rung's
decisions that a killed worker left half recorded are completed alike."""
import random

import optuna
from optuna.trial import TrialState

from gantry.sweeps.rung_decision import record_promotion
from gantry.sweeps.settings import SweepSettings, rungs_of
from gantry.sweeps.study import STUDY_NAME, make_pruner
from gantry.sweeps.synchronous_rungs import decide_waiting_trials, waiting_rung

ETA = 3
RUNGS = rungs_of(81, 1, ETA)  # 1, 3, 9, 27, 81: Hyperband has 5 brackets


def settings(pruner, trials):
    return SweepSettings(base_config={}, base_config_file="base.json", space={}, space_file="space.json",
                         metric="fid", direction="minimize", budget_images=RUNGS[-1], rungs=RUNGS, pruner=pruner,
                         synchronous=True, reduction_factor=ETA, trials=trials)


def values_of(trials, seed):
    rng = random.Random(seed)
    return [[rng.random() for _ in RUNGS] for _ in range(trials)]


def run(s, values, order_seed):
    """A synchronous sweep on given values: each rung reported by the trials that go on, in a
    shuffled order, deciding after each report as the workers' claims do."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=STUDY_NAME, pruner=make_pruner(s))
    trials = [study.ask() for _ in values]
    rng = random.Random(order_seed)
    while True:
        going_on = [t for t in trials if study._storage.get_trial(t._trial_id).state == TrialState.RUNNING
                    and waiting_rung(study._storage.get_trial(t._trial_id), s) is None]
        if not going_on:
            return study
        rng.shuffle(going_on)
        for t in going_on:
            rung = len(study._storage.get_trial(t._trial_id).intermediate_values)
            t.report(values[t.number][rung], RUNGS[rung])
            if rung == len(RUNGS) - 1:
                study.tell(t.number, values[t.number][rung])
            decide_waiting_trials(study, s)


def textbook(members, values, first_rung):
    """Synchronous successive halving of `members` from rung index `first_rung`: {trial: the last
    rung index it reaches}."""
    reached, alive = {}, list(members)
    for rung in range(len(RUNGS)):
        for n in alive:
            reached[n] = rung
        if rung < first_rung or rung == len(RUNGS) - 1:
            continue
        alive = sorted(alive, key=lambda n: values[n][rung])[:max(1, len(alive) // ETA)]
    return reached


def last_rungs(study):
    return {t.number: len(t.intermediate_values) - 1 for t in study.get_trials()}


def test_synchronous_successive_halving_ignores_the_order():
    s, values = settings("successive_halving", 20), values_of(20, 1)
    expected = textbook(range(20), values, 0)
    for order in range(3):
        assert last_rungs(run(s, values, order)) == expected


def test_synchronous_hyperband_halves_each_bracket_as_the_textbook():
    s, values = settings("hyperband", 40), values_of(40, 2)
    study = run(s, values, 0)
    pruner = make_pruner(s)  # Optuna's own bracket of each trial (a hash of the study's name and its number)
    pruner._try_initialization(study)
    brackets = {}
    for t in study.get_trials():
        brackets.setdefault(pruner._get_bracket_id(study, t), []).append(t.number)
    assert len(brackets) >= 3, brackets
    expected = {}
    for bracket, members in brackets.items():
        expected.update(textbook(members, values, bracket))  # bracket b first decides at rung b
    assert last_rungs(study) == expected
    assert last_rungs(run(s, values, 1)) == expected


def test_no_rung_is_decided_while_a_trial_could_still_reach_it():
    s, values = settings("successive_halving", 4), values_of(4, 3)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=STUDY_NAME, pruner=make_pruner(s))
    for n in range(3):  # the fourth trial is not created yet
        study.ask().report(values[n][0], RUNGS[0])
        assert decide_waiting_trials(study, s) == []
    last = study.ask()
    assert decide_waiting_trials(study, s) == []  # created, still training
    last.report(values[3][0], RUNGS[0])
    assert len(decide_waiting_trials(study, s)) == 4


def test_half_recorded_decisions_are_completed_alike():
    s, values = settings("successive_halving", 9), values_of(9, 4)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    studies = [optuna.create_study(study_name=STUDY_NAME, pruner=make_pruner(s)) for _ in range(2)]
    for study in studies:
        for n in range(9):
            study.ask().report(values[n][0], RUNGS[0])
    whole = studies[0]
    decide_waiting_trials(whole, s)
    half = studies[1]  # a worker killed after recording the first four decisions
    for t in whole.get_trials()[:4]:
        if t.state == TrialState.PRUNED:
            half.tell(t.number, state=TrialState.PRUNED)
        else:
            record_promotion(half, half.get_trials()[t.number], RUNGS[0])
    assert len(decide_waiting_trials(half, s)) == 5
    assert [(t.state, t.user_attrs) for t in half.get_trials()] == [(t.state, t.user_attrs) for t in whole.get_trials()]
