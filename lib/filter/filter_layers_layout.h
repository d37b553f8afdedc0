/* SPDX-License-Identifier: MIT */
/* Internal to lib/filter and lib/build: the params block and the layer
 * table of a layered file (docs/filter-format.md, "Deltas and layered
 * files"), read by filter_delta.c and written by builder/filter_layers.c. */
#pragma once

/* params of algorithm layers. */
enum {
    P_LAYER_COUNT = 0,
    P_END = 4,
};
/* One layer-table entry. */
enum {
    T_OFFSET = 0,
    T_SIZE = 8,
    T_ENTRY = 16,
};
