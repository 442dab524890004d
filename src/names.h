/* SPDX-License-Identifier: MIT */
/* names.h — the link names of lithe's internal symbols.
 *
 * Inside the shared library every internal function and variable is hidden
 * (INTERNAL), so a program never sees them.  A static link is different:
 * liblithe.a's hidden symbols still take part in the link, and an
 * unprefixed `os_map` or `heap_collect` would collide with (or, with
 * common symbols or weak definitions, silently bind to) a program's own.
 * So every internal global is linked as `_lithe_<name>`, the way mimalloc
 * marks its internals `_mi_` and jemalloc renames them in
 * private_namespace.h, while the source keeps the short names that read
 * well.  Public names stay `lithe_*` (include/lithe.h) plus the standard
 * allocator entry points; internals that already carry the `lithe_` prefix
 * (lithe_opt, lithe_tls_heap, ...) keep it: the prefix is lithe's own.
 *
 * The test `static_namespace` (tests/api/static_namespace.sh) lists every
 * defined global of liblithe.a and fails on one that is neither public nor
 * prefixed: a new internal function is added here, in its file's group,
 * before it lands.  Included first by internal.h, so every file of src/
 * and every white-box test sees the same names. */
#ifndef LITHE_NAMES_H
#define LITHE_NAMES_H

/* os.c */
#define os_address_limit    _lithe_os_address_limit
#define os_commit           _lithe_os_commit
#define os_decommit         _lithe_os_decommit
#define os_hugepage         _lithe_os_hugepage
#define os_map              _lithe_os_map
#define os_map_at           _lithe_os_map_at
#define os_move             _lithe_os_move
#define os_move_over        _lithe_os_move_over
#define os_now_ms           _lithe_os_now_ms
#define os_page_size        _lithe_os_page_size
#define os_peek             _lithe_os_peek
#define os_purge            _lithe_os_purge
#define os_resident         _lithe_os_resident
#define os_random           _lithe_os_random
#define os_release          _lithe_os_release
#define os_remap            _lithe_os_remap
#define os_reserve          _lithe_os_reserve
#define os_reserve_readonly _lithe_os_reserve_readonly
#define os_resize           _lithe_os_resize
#define os_stats            _lithe_os_stats
#define os_unmap            _lithe_os_unmap
/* pagemap.c */
#define pagemap_ensure       _lithe_pagemap_ensure
#define pagemap_forget       _lithe_pagemap_forget
#define pagemap_level_sparse _lithe_pagemap_level_sparse
#define pagemap_lock         _lithe_pagemap_lock
#define pagemap_set          _lithe_pagemap_set
/* meta.c */
#define meta_alloc        _lithe_meta_alloc
#define meta_collect      _lithe_meta_collect
#define meta_lock         _lithe_meta_lock
#define meta_purged_bytes _lithe_meta_purged_bytes
#define meta_verify       _lithe_meta_verify
#define span_desc_alloc   _lithe_span_desc_alloc
#define span_desc_free    _lithe_span_desc_free
#define span_desc_free_dead _lithe_span_desc_free_dead
/* arena.c */
#define arena_list         _lithe_arena_list
#define arena_total        _lithe_arena_total
#define arena_starved      _lithe_arena_starved
#define arena_new          _lithe_arena_new
#define arena_commit_to    _lithe_arena_commit_to
#define arena_decommit_above _lithe_arena_decommit_above
#define arena_trim_tails   _lithe_arena_trim_tails

/* pages.c */
#define page_caches        _lithe_page_caches
#define large_max          _lithe_large_max
#define pages_adopt        _lithe_pages_adopt
#define pages_alloc        _lithe_pages_alloc
#define pages_alloc_after  _lithe_pages_alloc_after
#define pages_alloc_free   _lithe_pages_alloc_free
#define pages_arena_count  _lithe_pages_arena_count
#define pages_collect      _lithe_pages_collect
#define pages_epoch        _lithe_pages_epoch
#define pages_fork_child   _lithe_pages_fork_child
#define pages_free         _lithe_pages_free
#define pages_init         _lithe_pages_init
#define pages_lock         _lithe_pages_lock
#define pages_purged_bytes _lithe_pages_purged_bytes
#define pages_purge_poll   _lithe_pages_purge_poll
#define pages_release_locked _lithe_pages_release_locked
#define pages_release_list_locked _lithe_pages_release_list_locked
#define pages_try_resize   _lithe_pages_try_resize
#define pages_usage        _lithe_pages_usage
#define pages_verify       _lithe_pages_verify
#define pages_waiting      _lithe_pages_waiting
#define pages_walk         _lithe_pages_walk
#define purge_cond         _lithe_purge_cond
#define purger_running     _lithe_purger_running
#define purge_due_ms       _lithe_purge_due_ms
#define purger_lead_ms     _lithe_purger_lead_ms
#define purger_init        _lithe_purger_init
#define purge_lead_ms      _lithe_purge_lead_ms
#define purge_runs         _lithe_purge_runs

/* purge.c */
#define purger_start       _lithe_purger_start
#define purger_libc_create _lithe_purger_libc_create
/* span.c */
#define span_collect_remote _lithe_span_collect_remote
#define span_contains_free  _lithe_span_contains_free
#define span_extend         _lithe_span_extend
#define span_init_small     _lithe_span_init_small
#define span_purge_uncarved _lithe_span_purge_uncarved
#define span_secure_init    _lithe_span_secure_init
/* sizeclass.c */
#define class_first_span_bytes _lithe_class_first_span_bytes
#define class_lut              _lithe_class_lut
#define class_size             _lithe_class_size
#define class_span_bytes       _lithe_class_span_bytes
#define sizeclass_init         _lithe_sizeclass_init
/* heap.c */
#define abandoned_lock          _lithe_abandoned_lock
#define all_heaps               _lithe_all_heaps
#define cache_flush             _lithe_cache_flush
#define cache_grab              _lithe_cache_grab
#define cache_take              _lithe_cache_take
#define cache_take_all          _lithe_cache_take_all
#define heap_adopt              _lithe_heap_adopt
#define heap_discard_all        _lithe_heap_discard_all
#define heap_drain_remote       _lithe_heap_drain_remote
#define heap_free_local_slow    _lithe_heap_free_local_slow
#define heap_give_away          _lithe_heap_give_away
#define heap_verify             _lithe_heap_verify
#define heaps_collect_abandoned _lithe_heaps_collect_abandoned
#define heaps_ncreated          _lithe_heaps_ncreated
#define heaps_nlive             _lithe_heaps_nlive
#define heaps_lock              _lithe_heaps_lock
#define heaps_stats             _lithe_heaps_stats
#define heaps_take_caches       _lithe_heaps_take_caches
#define lock_reinit             _lithe_lock_reinit
#define refile_from_full        _lithe_refile_from_full
#define span_abandon            _lithe_span_abandon
#define span_free_remote        _lithe_span_free_remote
#define span_release            _lithe_span_release
#define span_to_pages           _lithe_span_to_pages
#define spans_small_live        _lithe_spans_small_live
#define wait_notifying          _lithe_wait_notifying
/* bin.c */
#define bin_pop                 _lithe_bin_pop
#define bin_refill              _lithe_bin_refill
#define heap_bin_has            _lithe_heap_bin_has
#define heap_bin_spill          _lithe_heap_bin_spill
#define heap_bins_detach        _lithe_heap_bins_detach
#define heap_bins_flush         _lithe_heap_bins_flush
#define heap_bins_flush_over    _lithe_heap_bins_flush_over
#define heap_bins_reachable     _lithe_heap_bins_reachable
#define heap_bins_restart       _lithe_heap_bins_restart
#define heap_decay              _lithe_heap_decay
#define heap_free_remote        _lithe_heap_free_remote
#define heaps_bin_has           _lithe_heaps_bin_has
#define heaps_binned            _lithe_heaps_binned
/* thread.c */
#define fallback_lock           _lithe_fallback_lock
#define heap_collect            _lithe_heap_collect
#define heap_fork_child         _lithe_heap_fork_child
#define heap_fork_hook          _lithe_heap_fork_hook
#define heap_fork_parent        _lithe_heap_fork_parent
#define heap_fork_prepare       _lithe_heap_fork_prepare
#define heap_key_init           _lithe_heap_key_init
#define heap_malloc_class       _lithe_heap_malloc_class
#define heap_malloc_generic     _lithe_heap_malloc_generic
#define heap_thread_exit        _lithe_heap_thread_exit
/* large.c */
#define large_alloc              _lithe_large_alloc
#define large_alloc_zero         _lithe_large_alloc_zero
#define large_free               _lithe_large_free
#define large_init               _lithe_large_init
#define large_owner_forget       _lithe_large_owner_forget
#define lcache_due               _lithe_lcache_due
#define lcache_reclaim           _lithe_lcache_reclaim
#define large_realloc            _lithe_large_realloc
#define stat_large_live          _lithe_stat_large_live
/* xlarge.c */
#define stat_xlarge_bytes        _lithe_stat_xlarge_bytes
#define stat_xlarge_cached_bytes _lithe_stat_xlarge_cached_bytes
#define stat_xlarge_live         _lithe_stat_xlarge_live
#define xcache_due               _lithe_xcache_due
#define xcache_expire            _lithe_xcache_expire
#define xcache_yield             _lithe_xcache_yield
#define xlarge_alloc             _lithe_xlarge_alloc
#define xlarge_free              _lithe_xlarge_free
#define xlarge_resize            _lithe_xlarge_resize
/* limit.c */
#define limit_bytes            _lithe_limit_bytes
#define limit_hard             _lithe_limit_hard
#define limit_init             _lithe_limit_init
#define limit_pressure         _lithe_limit_pressure
#define limit_pressure_at      _lithe_limit_pressure_at
#define limit_pressure_collect _lithe_limit_pressure_collect
#define limit_reclaim          _lithe_limit_reclaim
/* alloc.c */
#define free_slow             _lithe_free_slow
#define free_unmapped         _lithe_free_unmapped
#define lt_aligned_alloc      _lithe_lt_aligned_alloc
#define lt_calloc             _lithe_lt_calloc
#define lt_collect            _lithe_lt_collect
#define lt_free               _lithe_lt_free
#define lt_free_sized         _lithe_lt_free_sized
#define lt_malloc             _lithe_lt_malloc
#define lt_malloc_trim        _lithe_lt_malloc_trim
#define lt_malloc_usable_size _lithe_lt_malloc_usable_size
#define lt_realloc_usable     _lithe_lt_realloc_usable
#define lt_memalign           _lithe_lt_memalign
#define lt_posix_memalign     _lithe_lt_posix_memalign
#define lt_pvalloc            _lithe_lt_pvalloc
#define lt_realloc            _lithe_lt_realloc
#define lt_reallocarray       _lithe_lt_reallocarray
#define lt_valloc             _lithe_lt_valloc
/* unwind.c */
#define fast_backtrace     _lithe_fast_backtrace
#define unwind_checked     _lithe_unwind_checked
#define unwind_fallbacks   _lithe_unwind_fallbacks
#define unwind_find_object _lithe_unwind_find_object
#define unwind_init        _lithe_unwind_init
#define unwind_mismatch    _lithe_unwind_mismatch
#define unwind_mode        _lithe_unwind_mode
#define unwind_stuck       _lithe_unwind_stuck
#define unwind_walked      _lithe_unwind_walked
/* userheap.c */
/* prof.c */
#define prof_alloc         _lithe_prof_alloc
#define prof_free          _lithe_prof_free
#define prof_heap_start    _lithe_prof_heap_start
#define prof_heapless_take _lithe_prof_heapless_take
#define prof_init          _lithe_prof_init
#define prof_warm_up       _lithe_prof_warm_up
#define prof_dump          _lithe_prof_dump
#define prof_malloc        _lithe_prof_malloc
#define prof_rate         _lithe_prof_rate
#define rng_seed          _lithe_rng_seed
#define prof_sampled_malloc _lithe_prof_sampled_malloc
#define prof_busy         _lithe_prof_busy
#define prof_mode          _lithe_prof_mode
#define prof_realloc       _lithe_prof_realloc
#define prof_tick_slow     _lithe_prof_tick_slow
/* introspect.c */
#define heap_walk _lithe_heap_walk
/* options.c */
#define fmt_dec            _lithe_fmt_dec
#define fmt_hex            _lithe_fmt_hex
#define options_init       _lithe_options_init
#define option_get         _lithe_option_get
#define option_refuse      _lithe_option_refuse
#define option_size        _lithe_option_size
#define option_ms          _lithe_option_ms
#define option_bool        _lithe_option_bool
#define option_enum        _lithe_option_enum
#define options_report     _lithe_options_report
#define out_dec            _lithe_out_dec
#define out_flush          _lithe_out_flush
#define out_hex            _lithe_out_hex
#define out_str            _lithe_out_str
#define out_write          _lithe_out_write

#endif
