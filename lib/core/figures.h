/* SPDX-License-Identifier: MIT */
/* Figure lists: a library's counters written once, as rows
 *
 *     #define FOO_FIGURES(X) \
 *         X(uint64_t, lookups, SUM) \
 *         X(uint32_t, pending, NOW)
 *
 * from which its stats struct (BR_FIGURE_FIELD), a program's sum over the
 * instances a reload replaces (BR_FIGURE_ADD) and its copy of the current
 * instance's state (BR_FIGURE_SET_NOW) are all made, so that a new figure
 * cannot be left out of one of them. SUM: a count since start, added up;
 * NOW: the state of the current instance (a gauge, a high-water mark), never
 * added up. a and b are the names of the two struct pointers in scope. */
#pragma once

#define BR_FIGURE_FIELD(type, name, how) type name;
#define BR_FIGURE_COUNT(type, name, how) +1

#define BR_FIGURE_ADD(type, name, how) BR_FIGURE_ADD_##how(name)
#define BR_FIGURE_ADD_SUM(name) a->name += b->name;
#define BR_FIGURE_ADD_NOW(name)

#define BR_FIGURE_SET_NOW(type, name, how) BR_FIGURE_SET_NOW_##how(name)
#define BR_FIGURE_SET_NOW_SUM(name)
#define BR_FIGURE_SET_NOW_NOW(name) a->name = b->name;
