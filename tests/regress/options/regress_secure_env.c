/* SPDX-License-Identifier: MIT */
/* regress_secure_env — a setuid program must not take lithe's options from
 * its caller's environment.
 *
 * Before the fix options were read with getenv, so whoever ran a setuid
 * program linked with lithe could set LITHE_ON_ERROR=ignore and have it
 * carry on past a detected double free. Now they are read with
 * secure_getenv: unset in a secure-execution process (AT_SECURE).
 *
 * Needs root: a setuid-root copy of this program in a fresh directory in
 * /tmp, run as user 65534 with LITHE_ON_ERROR=ignore; it frees a block
 * twice and must die by SIGABRT (the report not "ignored"). Exit 77 when
 * not root or when the copy does not run in secure mode (nosuid /tmp). */
#include "testutil.h"
#include <sys/auxv.h>
#include <sys/stat.h>

static char prog[256];

static void run_unprivileged(void *arg) {
  (void)arg;
  if (setgid(65534) != 0 || setuid(65534) != 0) _exit(78);
  setenv("LITHE_ON_ERROR", "ignore", 1);
  char *argv[] = {prog, "child", NULL};
  execv(prog, argv);
  _exit(79);
}

static int copy_file(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0700);
  if (in < 0 || out < 0) return -1;
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) return -1;
  close(in);
  close(out);
  return n == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    printf("AT_SECURE=%lu euid=%d uid=%d\n", getauxval(AT_SECURE), (int)geteuid(), (int)getuid());
    fflush(stdout);
    volatile char *p = malloc(32);
    free((void *)p);
    free((void *)p); /* reported: must abort, the caller's "ignore" does not count */
    return 0;
  }
  tu_require_lithe();
  if (geteuid() != 0) {
    printf("SKIP: needs root to make a setuid copy of itself\n");
    return 77;
  }
  char dir[] = "/tmp/lithe-secure-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  CHECK(chmod(dir, 0755) == 0);
  snprintf(prog, sizeof prog, "%s/prog", dir);
  CHECK(copy_file("/proc/self/exe", prog) == 0);
  CHECK(chown(prog, 0, 0) == 0 && chmod(prog, 04755) == 0);
  tu_child r;
  CHECK(tu_run_fn(&r, run_unprivileged, NULL, 30) == 0);
  unlink(prog);
  rmdir(dir);
  char how[64];
  tu_describe(&r, how, sizeof how);
  printf("setuid copy run as 65534 with LITHE_ON_ERROR=ignore: %s\n%s", how, r.out);
  printf("its stderr: %s\n", r.err);
  if (!strstr(r.out, "AT_SECURE=1")) {
    printf("SKIP: the setuid copy did not run in secure mode (%s)\n", how);
    return 77;
  }
  CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
         "the double free was not fatal (%s): LITHE_ON_ERROR was taken from the caller", how);
  CHECKF(strstr(r.err, "double free") && !strstr(r.err, "(ignored)"), "report: %s", r.err);
  return 0;
}
