"""``abort-backtest --tune``: the split by repository, every figure by hand on runs the
test makes (``outcome_fleet``: one Read per call, 100 tokens per call, no gold), the
tuned file, and ``watch`` with it stopping what ``abort-backtest`` stops.

Four repositories of four runs each: two resolved runs that read a new file at every
step, and two failed ones that read f1, then f2 again and again (``repeats`` with
``times = t`` stops such a run at call t + 1; a resolved run never repeats a call).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from claude_run import wait_until, watch_process, whole_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from outcome_fleet import TOKENS_PER_CALL, files, write_fleet

from streameval.commands.main import main
from streameval.live.abort.backtest import RunOutcome, Stop
from streameval.live.abort.engine import ABORT_NAME, load_policies
from streameval.live.abort.savings import Saving
from streameval.live.abort.tune import figures, split_runs


def _resolved(n: int) -> list[str]:
    return files(*[f"f{j}" for j in range(n)])


def _failed(n: int) -> list[str]:
    return files("f1", ("f2", n - 1))


#: repository -> (resolved runs' lengths, failed runs' lengths), in calls
LENGTHS = {"alpha": ((8, 10), (12, 16)), "beta": ((8, 12), (10, 14)),
           "gamma": ((9, 11), (12, 18)), "delta": ((10, 10), (20, 8))}
FLEET = {f"{r[0]}-{kind}{i}": (f"{r}__{r}-{i + (1 if kind == 'r' else 11)}", kind == "r",
                               (_resolved if kind == "r" else _failed)(n))
         for r, (ok, bad) in LENGTHS.items()
         for kind, lengths in (("r", ok), ("f", bad)) for i, n in enumerate(lengths)}


# --------------------------------------------------------------------------- the split


def _runs(groups: list[tuple[str, int]]) -> list[RunOutcome]:
    out = []
    for repo, n in groups:
        for i in range(n):
            o = RunOutcome(f"{repo}-{i}", f"{repo}__{repo}-{i}", "t", 1, 0, None, None, None,
                           resolved=True)
            o.repo = f"{repo}/{repo}"
            out.append(o)
    return out


@given(st.lists(st.integers(1, 40), min_size=2, max_size=14), st.integers(0, 1000),
       st.sampled_from([0.2, 0.3, 0.5, 0.7]))
@settings(max_examples=150, deadline=None)
def test_no_repository_is_on_both_sides(sizes, seed, share):
    runs = _runs([(f"r{i}", n) for i, n in enumerate(sizes)])
    s = split_runs(runs, share, seed)
    assert s.by == "repository"
    assert sorted(s.train + s.test) == list(range(len(runs)))
    assert s.train and s.test
    train_repos = {runs[i].repo for i in s.train}
    test_repos = {runs[i].repo for i in s.test}
    assert not train_repos & test_repos
    assert sorted(test_repos) == s.test_groups and sorted(train_repos) == s.train_groups


def test_the_split_holds_out_the_side_with_more_repositories_when_as_near():
    """One repository of 50 runs and five of 10: a half either way; the five are held
    out (the held-out intervals need repositories)."""
    runs = _runs([("big", 50)] + [(f"s{i}", 10) for i in range(5)])
    s = split_runs(runs, 0.5, 0)
    assert s.train_groups == ["big/big"] and len(s.test_groups) == 5


def test_one_repository_is_split_by_instance():
    runs = _runs([("solo", 12)])
    s = split_runs(runs, 0.5, 3)
    assert s.by == "instance" and len(s.test) == 6
    assert not {runs[i].instance_id for i in s.train} & {runs[i].instance_id for i in s.test}


# --------------------------------------------------------------------------- tuning


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    runs = write_fleet(root, FLEET)
    out, report = root / "tuned.toml", root / "tune.json"
    code = main(["abort-backtest", "--tune", str(out), str(runs), "--outcomes",
                 str(root / "outcomes.csv"), "--kinds", "repeats,max_steps", "--json",
                 str(report)])
    return root, runs, code, out, json.loads(report.read_text())


def _tokens(n: int) -> int:
    return TOKENS_PER_CALL * n


def test_a_stop_after_the_last_call_is_not_a_lost_run():
    """Two resolved runs of 10 calls, one stopped after call 6, one only after its last
    call (a budget known at the end): one lost of two, not two."""
    runs = _runs([("alpha", 2)])
    for o in runs:
        o.steps = 10
    none = Saving(0, False, None, False)
    stops = [Stop(6, False, 4, Saving(400, False, None, False), 4), Stop(10, False, 0, none, 0)]
    f = figures(runs, stops, "steps", intervals=True)
    assert (f.judged.lost, f.judged.after_last_call) == (1, 1)
    assert f.lost == 0.5 and f.lost_iv.estimate == 0.5
    assert f.saved_all == pytest.approx(4 / 20) and f.saved_failed == 0.0


def test_the_split_of_the_fleet(tuned):
    _root, _runs, code, _out, data = tuned
    assert code == 0
    assert data["split"] == {"by": "repository", "train_runs": 8, "test_runs": 8,
                             "train": ["beta/beta", "gamma/gamma"],
                             "test": ["alpha/alpha", "delta/delta"]}


def test_repeats_is_chosen_and_its_figures_by_hand(tuned):
    """repeats-2 stops every failed run at call 3 and no resolved run. Training (beta,
    gamma): failed runs of 10, 14, 12, 18 calls save 7 + 11 + 9 + 15 = 42 calls of the
    8+12+9+11+10+14+12+18 = 94 every run made; held out (alpha, delta): 9 + 13 + 17 + 5
    = 44 of 8+10+12+16+10+10+20+8 = 94."""
    data = tuned[4]
    assert data["chosen"] == {"repeats": "repeats-2", "max_steps": "max_steps-15"}
    pick = data["pick"]
    assert pick["policy"] == "repeats-2"
    assert pick["train"]["saved_on_failed_share"] == pytest.approx(42 / 94)
    assert pick["train"]["lost_share"] == 0.0
    test = pick["test"]
    assert test["saved_on_failed_share"] == pytest.approx(44 / 94)
    assert test["saved_share"] == pytest.approx(44 / 94)   # no resolved run stopped
    j = test["judged"]
    assert (j["runs"], j["resolved"], j["lost"], j["caught"]) == (8, 4, 0, 4)
    assert j["saved_on_failed"]["tokens"] == _tokens(44)
    assert j["spend"]["tokens"] == _tokens(94)
    assert test["lost_interval"]["estimate"] == 0.0
    assert test["saved_on_failed_interval"]["estimate"] == pytest.approx(44 / 94)
    # two repositories held out: instance-level intervals, and said so
    assert test["saved_on_failed_interval"]["unit"] == "instance"
    assert any("2 repositories" in w for w in data["warnings"])


def test_the_max_steps_front_and_choice(tuned):
    """Training resolved runs are 8, 12, 9, 11 calls long: max_steps 15 (and above) loses
    none and stops the failed runs of 18 (at 15: 3 saved); 10 stops the 12 and 11 (lost
    2 of 4) and saves 0 + 4 + 2 + 8 = 14 on failed runs... so the choice is 15."""
    data = tuned[4]
    front = {c["policy"]: c for c in data["fronts"]["max_steps"]}
    assert front["max_steps-15"]["train"]["saved_on_failed_share"] == pytest.approx(3 / 94)
    assert front["max_steps-15"]["train"]["lost_share"] == 0.0
    assert front["max_steps-10"]["train"]["lost_share"] == pytest.approx(2 / 4)
    assert front["max_steps-10"]["train"]["saved_on_failed_share"] == pytest.approx(14 / 94)
    assert "max_steps-20" not in front   # stops nothing in training: no policy at all


def test_the_tuned_file_holds_the_pick_and_the_other_choices_commented(tuned):
    out = tuned[3]
    config = load_policies(out)
    [p] = config.policies
    assert (p.name, p.kind, p.limit, p.action) == ("repeats-2", "repeats", 2.0, "file")
    text = out.read_text()
    assert "# name = \"max_steps-15\"" in text and "held out: saved on failed runs" in text


def test_watch_with_the_tuned_file_stops_what_abort_backtest_stops(tuned, tmp_path):
    """The tuned file, backtested and watched live (a real ``streameval watch`` process):
    the same runs, stopped at the same steps."""
    root, runs, _code, out, _data = tuned
    report = tmp_path / "bt.json"
    assert main(["abort-backtest", str(out), str(runs), "--json", str(report)]) == 0
    [policy] = json.loads(report.read_text())["policies"]
    backtested = {r["run_id"]: r["step"] for r in policy["stopped_runs"]}
    assert set(backtested) == {k for k, v in FLEET.items() if not v[1]}
    watched = tmp_path / "runs"
    watched.mkdir()
    records = tmp_path / "out.jsonl"
    proc, _port = watch_process([str(watched), "--abort-config", str(out), "--out", str(records),
                                 "--idle-timeout", "1", "--patch-grace", "0", "--port", "0",
                                 "--no-checkpoint"],
                                tmp_path / "watch.log")
    try:
        for d in sorted(runs.iterdir()):   # the runs arrive while it watches
            (watched / d.name).mkdir()
            for f in ("meta.json", "trace.jsonl"):
                (watched / d.name / f).write_bytes((d / f).read_bytes())
        wait_until(lambda: len(whole_lines(records)) == len(FLEET),
                   timeout=120, what="every run's record")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    stopped = {}
    for abort in watched.glob(f"*/{ABORT_NAME}"):
        for d in json.loads(abort.read_text())["decisions"]:
            stopped[d["run_id"]] = d["step"]
    assert stopped == backtested


def test_tuning_needs_outcomes_and_says_when_nothing_keeps_to_max_lost(tmp_path, capsys):
    runs = write_fleet(tmp_path, {"a": ("alpha__alpha-1", True, _resolved(8)),
                                  "b": ("beta__beta-1", True, _resolved(9))})
    out = tmp_path / "t.toml"
    assert main(["abort-backtest", "--tune", str(out), str(runs)]) == 2
    assert "give --outcomes" in capsys.readouterr().err
    # only resolved runs: every stop is a loss, nothing saves on failed runs
    assert main(["abort-backtest", "--tune", str(out), str(runs), "--outcomes",
                 str(tmp_path / "outcomes.csv"), "--kinds", "max_steps"]) == 1
    assert "nothing written" in capsys.readouterr().out
    assert not Path(out).exists()
