"""Two-axis collectives on a torus (`rings.torus_schedule`): one ring phase per axis, ending where each should."""

import pytest

from scalebook.rings import ring_schedule, torus_schedule


def test_torus_collectives_end_where_they_should() -> None:
    X, Y = 4, 2
    gathered = torus_schedule(X, Y, "all_gather")[-1][1]
    assert all(len(p) == X * Y and {fill for _, fill in p.values()} == {1.0} for p in gathered.values())
    scattered = torus_schedule(X, Y, "reduce_scatter")[-1][1]
    owners = {piece for p in scattered.values() for piece, (_, fill) in p.items() if fill}
    assert len(owners) == X * Y and all([f for _, f in p.values()] == [pytest.approx(1.0)] for p in scattered.values())
    reduced = torus_schedule(X, Y, "all_reduce")
    assert reduced[-1][1] == gathered
    # AllToAll: every device ends with X·Y pieces, all bound for itself (one colour: its own index)
    exchanged = torus_schedule(X, Y, "all_to_all")[-1][1]
    assert all(len(p) == X * Y and {c for c, _ in p.values()} == {x * Y + y} for (x, y), p in exchanged.items())
    # each ring phase is the priced ring schedule: X/2 + Y/2 steps for a bidirectional gather
    assert len(torus_schedule(X, Y, "all_gather")) - 1 == len(ring_schedule(X)) - 1 + \
        len(ring_schedule(Y)) - 1


def test_a_torus_outside_the_drawable_sizes_or_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="X=9"):
        torus_schedule(9, 2)
    with pytest.raises(ValueError, match="kind='broadcast'"):
        torus_schedule(2, 2, "broadcast")
