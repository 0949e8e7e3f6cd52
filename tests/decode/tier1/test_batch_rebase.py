"""A tier-1 batch's rebase in one launch (cuda/batch.cu, ``RowBatch.rebase_on_device``) against
its numpy twin (``RowBatch.rebase``): every part's rows, empty parts and a part left at zero."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cinegpu.decode.tier1.codeblock import CB_COLUMNS
from cinegpu.decode.tier1.gpu import RowBatch


def _parts(rng, rows_each):
    parts = []
    for n in rows_each:
        table = rng.integers(0, 1 << 20, (n, CB_COLUMNS)).astype(np.int64)
        parts.append(SimpleNamespace(table=table, coded=np.zeros(rng.integers(0, 50), np.uint8),
                                     seg_lengths=np.zeros(rng.integers(0, 30), np.int32),
                                     seg_passes=np.zeros(0, np.int32), entries=1,
                                     order=rng.permutation(n).astype(np.int32)))
    return parts


def test_the_twin_leaves_a_lone_part_at_zero_as_it_is():
    rng = np.random.default_rng(1)
    parts = _parts(rng, [7])
    for p in parts:
        p.coded, p.seg_lengths = p.coded[:0], p.seg_lengths[:0]
    batch = RowBatch.of(parts, [0])
    table, order = parts[0].table.copy(), parts[0].order.copy()
    batch.rebase(table, order)
    assert np.array_equal(table, parts[0].table) and np.array_equal(order, parts[0].order)


@pytest.mark.gpu
@pytest.mark.parametrize("rows_each", [[5], [0, 3, 0, 0, 9, 1], [1000, 0, 77, 4096, 3], [1] * 300])
def test_one_launch_rebases_as_the_twin(rows_each):
    import cupy

    rng = np.random.default_rng(len(rows_each))
    parts = _parts(rng, rows_each)
    bases = np.cumsum([0, *rng.integers(0, 5000, len(parts) - 1)]).tolist()
    batch = RowBatch.of(parts, bases)
    table = np.concatenate([p.table for p in parts]) if parts else np.zeros((0, CB_COLUMNS), np.int64)
    order = np.concatenate([p.order for p in parts])
    want_table, want_order = table.copy(), order.copy()
    batch.rebase(want_table, want_order)
    dev_table, dev_order = cupy.asarray(table), cupy.asarray(order)
    batch.rebase_on_device(dev_table, dev_order)
    assert np.array_equal(dev_table.get(), want_table)
    assert np.array_equal(dev_order.get(), want_order)
