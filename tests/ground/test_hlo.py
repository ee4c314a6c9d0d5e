"""Tiled layouts in memory (`hlo.memory_order`): the book's two pictures of chapter 9, and what any layout satisfies."""

import pytest

from scalebook.hlo import memory_order, padding


def test_f32_3x5_in_2x2_tiles_numbers_memory_like_the_book():
    # f32[3,5] in 2x2 tiles: the first tile holds 0-3 row-major, the padding slot of the last tile comes last.
    order = memory_order((3, 5), "T(2,2)")
    assert (len(order), len(order[0])) == (4, 6)
    assert [row[:2] for row in order[:2]] == [[0, 1], [2, 3]] and order[3][5] == 23
    assert order[0][2:4] == [4, 5]


def test_bf16_row_pairs_packed_run_down_each_column_pair():
    # bf16[4,8] with T(2,4)(2,1): pairs of rows packed into 32-bit words, so memory runs down each column.
    packed = memory_order((4, 8), "T(2,4)(2,1)")
    assert [row[:2] for row in packed[:2]] == [[0, 2], [1, 3]]


@pytest.mark.parametrize("shape, tile", [((3, 5), "T(2,2)"), ((4, 8), "T(2,4)(2,1)"), ((9, 130), "T(8,128)(2,1)"),
                                         ((1, 1), ((8, 128),))])
def test_every_stored_slot_has_one_place_and_the_grid_is_the_padded_shape(shape, tile):
    order = memory_order(shape, tile)
    assert (len(order), len(order[0])) == padding(shape, tile)["padded_shape"]
    assert sorted(p for row in order for p in row) == list(range(len(order) * len(order[0])))


def test_a_shape_that_is_not_two_dimensional_is_refused_by_name():
    with pytest.raises(ValueError, match="shape"):
        memory_order((2, 3, 4), "T(2,2)")
