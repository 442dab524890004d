/* SPDX-License-Identifier: MIT */
/* regress_purge_join_hang's library: 48 KiB of dynamic TLS.  Loaded with
 * dlopen, its block of each thread is malloc'ed at the thread's first
 * touch (__tls_get_addr) and freed by glibc when the thread's stack is
 * reclaimed: pthread_join -> __nptl_free_stacks -> _dl_deallocate_tls ->
 * free, with glibc's stack-cache lock held. */
__thread char tls_dyn_buf[48 * 1024];
char *tls_dyn_touch(int v) {
  for (unsigned i = 0; i < sizeof tls_dyn_buf; i += 4096) tls_dyn_buf[i] = (char)v;
  return tls_dyn_buf;
}
