"""The synthetic server's prefix cache: the longest prefix an earlier prompt had, in tokens."""

from __future__ import annotations

from perfkit.workloads.serving.server.prefix_cache import PrefixCache


def test_the_longest_earlier_prefix_is_cached() -> None:
    cache = PrefixCache()
    assert cache.admit([1, 2, 3]) == 0
    assert cache.admit([1, 2, 3]) == 3  # the same prompt again
    assert cache.admit([1, 2, 3, 4, 5]) == 3  # a longer one: its first three
    assert cache.admit([1, 2, 9]) == 2
    assert cache.admit([1, 2, 3, 4, 6]) == 4  # the second prompt's 4 tokens were remembered
    assert cache.admit([7, 2, 3]) == 0  # a different first token: nothing, the rest matching or not
    assert cache.admit([]) == 0


def test_a_full_cache_forgets_everything_and_starts_again() -> None:
    cache = PrefixCache(max_entries=5)
    assert cache.admit([1, 2, 3]) == 0
    assert cache.admit([1, 2, 3, 4]) == 3  # 4 entries
    assert cache.admit([5, 6]) == 0  # 6 > 5: emptied, then [5, 6] remembered
    assert cache.admit([1, 2, 3]) == 0 and cache.admit([5, 6, 7]) == 2
