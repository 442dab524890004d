/* SPDX-License-Identifier: MIT */
/* arena.c — arenas: large regions (64 MiB by default) reserved PROT_NONE
 * and aligned to their size.  Each hands out pages bottom-up with a bump
 * pointer (to the page heap, pages.c) and commits (read/write) just ahead
 * of it, in steps that grow with the arena's use: a tiny heap commits
 * 64 KiB, not 64 MiB (the commit charge stays proportional to the heap,
 * not to the reservation; bench-commit measures it).  Under an
 * address-space limit (ulimit -v) arenas shrink, and give back their
 * tails.  Callers hold pages_lock. */
#define _GNU_SOURCE
#include "internal.h"

arena_t *arena_list;
size_t arena_total;

/* Commit ahead of the bump pointer: steps of 1/8 of what the arena already
 * uses, 64 KiB to 4 MiB, so mprotect calls stay few as the heap grows. */
bool arena_commit_to(arena_t *a, char *need) {
  if (need <= a->commit_top) return true;
  size_t used = (size_t)(a->commit_top - a->base);
  size_t step = used / 8;
  if (step > 4 * MiB) step = 4 * MiB;
  char *top = (char *)align_up((uintptr_t)need + step, 64 * KiB);
  if (top > a->base + a->size) top = a->base + a->size;
  if (!os_commit(a->commit_top, (size_t)(top - a->commit_top))) {
    /* try the bare minimum */
    top = (char *)align_up((uintptr_t)need, os_page_size());
    if (!os_commit(a->commit_top, (size_t)(top - a->commit_top))) return false;
  }
  a->commit_top = top;
  return true;
}

/* Arena size to try first: the option, or, once address space ran short
 * (ulimit -v), the smaller size that last fitted. */
static size_t arena_unit;

/* The commit above top (an arena's new end of use) given back. */
void arena_decommit_above(arena_t *a, char *top) {
  if (a->commit_top <= top) return;
  os_decommit(top, (size_t)(a->commit_top - top));
  a->commit_top = top;
}

/* Under an address-space limit a reserved page counts as much as a used
 * one: when no new arena fits, every arena gives back what lies above its
 * bump (never carved: no span, free run or map entry is there; committed
 * but untouched up to commit_top) and ends there.  Returns the bytes
 * given back (tests/regress/arena/regress_ulimit_v.c;
 * docs/lab/2026-12-07-ulimit-v.md). */
size_t arena_trim_tails(void) {
  lt_assert_held(&pages_lock);
  size_t freed = 0;
  for (arena_t *a = arena_list; a; a = a->next) {
    char *cut = (char *)align_up((uintptr_t)a->bump, os_page_size()), *end = a->base + a->size;
    if (cut >= end) continue;
    lt_assert(a->commit_top >= cut);
    arena_decommit_above(a, cut);
    os_release(cut, (size_t)(end - cut));
    a->size = (size_t)(cut - a->base);
    freed += (size_t)(end - cut);
  }
  return freed;
}

/* Set when not even the smallest arena fitted (address space exhausted:
 * ulimit -v), cleared when one fits again.  Until then a new arena is
 * tried once, at the smallest size that holds the request, instead of
 * down the whole halving again: a program at its limit that goes on
 * calling malloc makes one failing mmap here, not twenty
 * (docs/lab/2026-12-07-at-the-limit.md).  That one try stays: lithe does
 * not see the program unmap memory of its own (regress_ulimit_v). */
bool arena_starved;

arena_t *arena_new(size_t min_bytes) {
  lt_assert_held(&pages_lock); /* arena_unit, arena_starved, arena_list */
  if (!arena_unit) {
    /* Under an address-space limit an arena takes at most 1/16 of it: the
     * program's own mappings need the rest (python3 under ulimit -v 16384
     * maps its 1 MiB object arenas itself, and died of an 8 MiB arena). */
    size_t lim = os_address_limit(), unit = lithe_opt.arena_size;
    while (unit > ARENA_FALLBACK_MIN && unit > lim / 16) unit /= 2;
    if (unit < lithe_opt.arena_size) arena_unit = unit;
  }
  size_t unit = arena_starved ? ARENA_LAST_MIN : arena_unit ? arena_unit : lithe_opt.arena_size;
  size_t size;
  char *base;
  bool trimmed = false;
  for (;;) {
    size = min_bytes > unit ? align_up(min_bytes, unit) : unit;
    /* aligned to the page where the unit does not fit: aligning may
     * need size + unit of address space for a moment, and nothing needs
     * an arena aligned (it only helps huge pages) */
    base = os_reserve(size, unit, PAGE_SIZE);
    if (base && pagemap_ensure(base, size)) break;
    if (base) os_release(base, size);
    /* halve, while that still makes the arena smaller: the next arenas
     * start from the smaller size (short of address space from now on)
     * down to ARENA_FALLBACK_MIN, and below it only this one is smaller */
    if (unit / 2 < ARENA_LAST_MIN || align_up(min_bytes, unit / 2) >= size) {
      /* the smallest did not fit either: the arenas' tails back, and
       * from the first size again (none has a tail while starved: a
       * new arena ends that, and the last failure took them all) */
      if (trimmed || !arena_trim_tails()) {
        arena_starved = true;
        return NULL;
      }
      trimmed = true;
      unit = arena_unit ? arena_unit : lithe_opt.arena_size;
      continue;
    }
    unit /= 2;
    if (unit >= ARENA_FALLBACK_MIN) arena_unit = unit;
  }
  if (unit >= ARENA_FALLBACK_MIN) arena_unit = unit;
  arena_starved = false;
  lt_assert_v(((uintptr_t)base & (PAGE_SIZE - 1)) == 0, (uintptr_t)base); /* spans start on a page */
  arena_t *a = meta_alloc(sizeof *a);
  if (!a) { os_release(base, size); return NULL; }
  a->base = a->bump = a->commit_top = base;
  a->size = size;
  a->next = arena_list;
  arena_list = a;
  arena_total++;
  return a;
}
