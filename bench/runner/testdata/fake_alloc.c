/* SPDX-License-Identifier: MIT */
/* A do-nothing library for LD_PRELOAD in the runner's self-test: the fake
 * benchmark programs (shell scripts) look at $LD_PRELOAD to decide what to
 * print, so nothing here needs to replace malloc. */
int lithe_runner_fake_alloc_marker(void) { return 42; }
