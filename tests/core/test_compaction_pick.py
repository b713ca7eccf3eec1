"""Which runs a compaction after a commit rewrites: Paimon's universal compaction."""

from tablelog.commit.compaction_pick import Pick, Run, full, pick


def test_fewer_runs_than_the_trigger_are_left_alone() -> None:
    assert pick([Run(0, 10)] * 4, trigger=5, max_level=5) is None


def test_runs_of_one_size_past_the_trigger_are_all_rewritten_into_the_highest_level() -> None:
    assert pick([Run(0, 10)] * 6, trigger=5, max_level=5) == Pick(6, 5)


def test_small_new_runs_over_a_big_old_one_become_one_run_just_above_it() -> None:
    runs = [Run(0, 10)] * 6 + [Run(5, 10_000)]
    assert pick(runs, trigger=5, max_level=5) == Pick(6, 4)


def test_newer_runs_outweighing_the_oldest_past_the_size_amplification_rewrite_everything() -> None:
    assert pick([Run(0, 100), Run(0, 100), Run(0, 100), Run(4, 20), Run(5, 50)], trigger=5, max_level=5) == Pick(5, 5)


def test_past_the_trigger_at_least_the_runs_over_it_are_rewritten_even_when_sizes_grow() -> None:
    runs = [Run(0, 1), Run(0, 10), Run(0, 100), Run(0, 1_000), Run(0, 10_000), Run(3, 100_000), Run(5, 10**9)]
    chosen = pick(runs, trigger=5, max_level=5)
    assert chosen is not None and chosen.count >= 3 and chosen.output_level > 0


def test_tablelog_compact_rewrites_every_run_of_a_bucket_with_more_than_one() -> None:
    assert full([Run(0, 1), Run(5, 100)], max_level=5) == Pick(2, 5)
    assert full([Run(5, 100)], max_level=5) is None
