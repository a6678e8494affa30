"""The run-level rules of docs/metrics.md §5b, one by one, on the counts they read."""

from __future__ import annotations

from streameval.errors import Reason
from streameval.scoring.verdict import RunFacts, error, figures, problems, unscorable


def facts(**kw) -> RunFacts:
    base = {"tool_calls": 3, "sidechain_calls": 0, "bad_lines": {}, "first_bad": {},
            "named_paths": 4, "outside_paths": 0, "context_empty": False}
    base.update(kw)
    return RunFacts(**base)


def test_a_run_that_read_something_inside_the_repo_has_no_run_level_problem():
    assert problems(facts()) == {}
    assert error(facts(), "t.jsonl", None, scored=True) is None


def test_an_empty_final_context_is_flagged_nothing_read_and_still_scored():
    f = facts(context_empty=True, named_paths=0)
    assert problems(f) == {"nothing_read": 1}
    assert error(f, "t.jsonl", None, scored=True) is None


def test_more_than_half_the_paths_outside_is_flagged_half_is_not():
    assert problems(facts(named_paths=5, outside_paths=3)) == {"mostly_outside_repo": 1}
    assert problems(facts(named_paths=4, outside_paths=2)) == {}
    assert problems(facts(named_paths=1, outside_paths=1)) == {"mostly_outside_repo": 1}


def test_a_missing_end_event_is_a_loud_flag_and_the_run_still_scored():
    f = facts(end_missing="result")
    assert problems(f) == {"no_end_event": 1}
    assert error(f, "t.jsonl", None, scored=True) is None


def test_repo_mismatch_needs_two_reads_and_a_fifth_of_those_checked():
    assert problems(facts(reads_checked=10, reads_mismatching=2)) == {"repo_mismatch": 1}
    assert problems(facts(reads_checked=11, reads_mismatching=2)) == {}     # 18%
    assert problems(facts(reads_checked=2, reads_mismatching=1)) == {}      # one read alone
    assert problems(facts(reads_checked=43, reads_mismatching=2)) == {}     # the corpus's worst
    assert figures(facts(reads_checked=12, reads_mismatching=3)) == {
        "repo_mismatch": {"reads_checked": 12, "reads_mismatching": 3}}
    assert figures(facts(reads_checked=12, reads_mismatching=1)) == {}


def test_a_cut_trace_is_an_error_naming_the_trace_and_where():
    f = facts(bad_lines={"partial_line": 1},
              first_bad={"partial_line": "line 9 ends without its newline before its JSON does"})
    assert problems(f) == {"truncated_trace": 1}
    reason, message = unscorable(f, "runs/a/trace.jsonl")
    assert reason is Reason.TRUNCATED_TRACE
    assert "runs/a/trace.jsonl" in message and "line 9" in message and "\n" not in message


def test_actions_of_which_no_call_was_read_are_an_error_some_read_are_not():
    unread = {"unread_action": 4}
    first = {"unread_action": "line 2: an ActionEvent without a string tool_name"}
    f = facts(tool_calls=0, bad_lines=unread, first_bad=first, context_empty=True)
    assert problems(f) == {"no_calls_read": 1, "nothing_read": 1}
    reason, message = unscorable(f, "out.jsonl")
    assert reason is Reason.NO_CALLS_READ and "4 action(s)" in message and "line 2" in message
    assert unscorable(facts(tool_calls=1, bad_lines=unread), "out.jsonl") is None
    # a sub-agent's calls are calls the reader took
    assert unscorable(facts(tool_calls=0, sidechain_calls=2, bad_lines=unread), "x") is None


def test_a_cut_trace_wins_over_the_sessions_own_error_which_wins_over_no_calls():
    cut = facts(tool_calls=0, bad_lines={"partial_line": 1, "unread_action": 1})
    assert error(cut, "t", "missing_gold: no row", scored=False).startswith("truncated_trace:")
    unread = facts(tool_calls=0, bad_lines={"unread_action": 1})
    assert error(unread, "t", "missing_gold: no row", scored=False) == "missing_gold: no row"
    assert error(unread, "t", None, scored=True).startswith("no_calls_read:")


def test_a_format_that_states_its_context_is_not_judged():
    assert error(None, "p.jsonl", None, scored=True) is None
    assert error(None, "p.jsonl", "missing_gold: x", scored=False) == "missing_gold: x"
