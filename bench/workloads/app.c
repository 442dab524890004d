/* SPDX-License-Identifier: MIT */
/* bench-app: one real application from Debian, run once under the
 * allocator this process was started with, measured as the other
 * MallocBench-style rows are (bench/PROTOCOL.md, docs/runner.md "Real
 * applications").
 *
 *   bench-app --app NAME [--quick] [--keep]
 *
 *   gxx     g++ -std=c++17 -O1 -c on a generated template-heavy unit
 *   python  python3 on a generated object / dict / json workload
 *   sqlite  sqlite3 (in memory) building, indexing, updating and grouping
 *           a few hundred thousand rows
 *   redis   redis-server on a free 127.0.0.1 port under redis-benchmark
 *           (a bounded request count); the server is the one measured
 *   z3      z3 on a generated job-shop scheduling problem (QF_LIA)
 *
 * The runner starts this program with LD_PRELOAD=<allocator> (nothing for
 * glibc). It runs the application with LD_PRELOAD="<that allocator>
 * libbench-appstat.so" (for glibc: glibc's own libc.so.6, so that a
 * program linked against another malloc -- Debian's redis-server links
 * libjemalloc -- still gets glibc's). libbench-appstat.so reports, from
 * each of the application's processes at its exit, the anonymous peak,
 * RssAnon after the allocator's forcing release, and where malloc
 * resolved. The load generator (redis-benchmark) runs with nothing
 * preloaded: the same client for every allocator.
 *
 * Output (Go benchmark format):
 *   Benchmarkapp_NAME 1 <ns> ns/op <kB> peak-kB <kB> end-kB <n> faults
 * ns/op: wall time of the whole command (g++: driver, cc1plus and as); for
 * redis the server's CPU time (user + system), from its start to its exit
 * after the load (the client shares the 2 CPUs, its wall time would
 * measure the client as much as the server). peak-kB / end-kB: those of the
 * application's process with the largest peak (g++: cc1plus; its
 * processes run one after another). faults: minor faults of the command
 * and its descendants (wait4). A missing program: "# skip: ..." naming the
 * Debian package, exit 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int quick;
static char tmpdir[1024];
static char exe_dir[PATH_MAX];

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench-app: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(2);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Debian programs only: /usr/bin, /bin, /usr/local/bin (not a pyenv shim
 * first in PATH). 1 and the path in out when found. */
static int find_prog(const char *name, char *out, size_t n) {
  static const char *dirs[] = {"/usr/bin", "/bin", "/usr/local/bin", NULL};
  for (int i = 0; dirs[i]; i++) {
    snprintf(out, n, "%s/%s", dirs[i], name);
    if (access(out, X_OK) == 0) return 1;
  }
  return 0;
}

static void tpath(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

static FILE *tcreate(const char *name) {
  char p[PATH_MAX];
  tpath(p, sizeof p, name);
  FILE *f = fopen(p, "w");
  if (!f) die("cannot write %s: %s", p, strerror(errno));
  return f;
}

static char *slurp(const char *name) {
  char p[PATH_MAX];
  tpath(p, sizeof p, name);
  FILE *f = fopen(p, "r");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  b[got] = 0;
  fclose(f);
  return b;
}

/* ---- environments ------------------------------------------------------ */

static char *app_env[256], *plain_env[256];

/* app_env: ours with LD_PRELOAD = <allocator or libc> <appstat>, and
 * BENCH_APPSTAT_OUT; plain_env: ours without LD_PRELOAD (the client) */
static void make_envs(void) {
  const char *pre = getenv("LD_PRELOAD");
  char libc[PATH_MAX] = "";
  if (!pre || !*pre) {
    Dl_info di;
    if (dladdr((void *)gnu_get_libc_version, &di) && di.dli_fname) snprintf(libc, sizeof libc, "%s", di.dli_fname);
    pre = libc;
  }
  /* the application runs in the scratch folder: absolute paths */
  static char abs[PATH_MAX * 2];
  size_t off = 0;
  char *copy = strdup(pre), *save = NULL;
  for (char *t = strtok_r(copy, " :", &save); t; t = strtok_r(NULL, " :", &save)) {
    char real[PATH_MAX];
    off += (size_t)snprintf(abs + off, sizeof abs - off, "%s%s", off ? " " : "",
                            realpath(t, real) ? real : t);
    if (off >= sizeof abs) die("LD_PRELOAD too long");
  }
  free(copy);
  pre = abs;
  char stat[PATH_MAX + 32];
  snprintf(stat, sizeof stat, "%.*s/libbench-appstat.so", PATH_MAX - 32, exe_dir);
  if (access(stat, R_OK) != 0) die("%s is missing (build it with make)", stat);
  int a = 0, p = 0;
  for (char **e = environ; *e && a < 250; e++) {
    if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "BENCH_APPSTAT_OUT=", 18)) continue;
    app_env[a++] = *e;
    plain_env[p++] = *e;
  }
  char b[PATH_MAX * 4];
  snprintf(b, sizeof b, "LD_PRELOAD=%s%s%s", pre, *pre ? " " : "", stat);
  app_env[a++] = strdup(b);
  tpath(b, sizeof b, "appstat.tsv");
  char *o = malloc(strlen(b) + 32);
  sprintf(o, "BENCH_APPSTAT_OUT=%s", b);
  app_env[a++] = o;
  app_env[a] = NULL;
  plain_env[p] = NULL;
}

/* ---- processes --------------------------------------------------------- */

static pid_t spawn(char *const argv[], char **env, const char *in, const char *out) {
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    if (chdir(tmpdir) != 0) _exit(126);
    char p[PATH_MAX];
    int fd;
    if (in) tpath(p, sizeof p, in);
    fd = open(in ? p : "/dev/null", O_RDONLY);
    if (fd >= 0) dup2(fd, 0);
    tpath(p, sizeof p, out);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execve(argv[0], argv, env);
    _exit(127);
  }
  return pid;
}

/* wait for pid at most `limit` seconds (then SIGKILL, -1) */
static int wait_for(pid_t pid, struct rusage *ru, double limit) {
  double t0 = now_s();
  int status;
  for (;;) {
    pid_t w = wait4(pid, &status, WNOHANG, ru);
    if (w == pid) return status;
    if (w < 0 && errno != EINTR) die("wait4: %s", strerror(errno));
    if (now_s() - t0 > limit) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, ru);
      return -1;
    }
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static void check_status(const char *what, int status, const char *outfile) {
  if (status == 0) return;
  char *o = slurp(outfile);
  size_t n = strlen(o);
  const char *tail = n > 1500 ? o + n - 1500 : o;
  fprintf(stderr, "%s\n", tail);
  if (status < 0) die("%s: timed out", what);
  if (WIFSIGNALED(status)) die("%s: killed by signal %d (%s)", what, WTERMSIG(status), strsignal(WTERMSIG(status)));
  die("%s: exit status %d", what, WEXITSTATUS(status));
}

/* run argv (under app_env) to completion: wall seconds, rusage */
/* the loader prints this when it cannot preload a library, and goes on
 * without it: the application would run on another malloc */
static void check_preload(const char *out) {
  char *o = slurp(out);
  char *w = strstr(o, "cannot be preloaded");
  if (w) {
    char *ln = w;
    while (ln > o && ln[-1] != '\n') ln--;
    fprintf(stderr, "%.*s\n", (int)strcspn(ln, "\n"), ln);
    die("the loader refused a preloaded library in the application");
  }
  free(o);
}

static double run_app(char *const argv[], const char *in, const char *out, struct rusage *ru) {
  double t0 = now_s();
  pid_t pid = spawn(argv, app_env, in, out);
  int st = wait_for(pid, ru, 300);
  double t = now_s() - t0;
  check_status(argv[0], st, out);
  check_preload(out);
  return t;
}

static void need(const char *out, const char *text, const char *what) {
  char *o = slurp(out);
  if (!strstr(o, text)) {
    fprintf(stderr, "%s\n", o);
    die("check failed: %s: the output lacks \"%s\"", what, text);
  }
  free(o);
}

/* ---- the applications -------------------------------------------------- */

static unsigned long long lcg_state = 12345;
static unsigned lcg(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)(lcg_state >> 33);
}

static double app_gxx(const char *prog, struct rusage *ru) {
  int n = quick ? 1 : 2;
  FILE *f = tcreate("unit.cpp");
  fputs("#include <algorithm>\n#include <functional>\n#include <map>\n#include <memory>\n"
        "#include <numeric>\n#include <set>\n#include <string>\n#include <tuple>\n"
        "#include <unordered_map>\n#include <vector>\n"
        "template <int I> struct Key { int v; std::string s;\n"
        "  bool operator<(const Key &o) const { return std::tie(v, s) < std::tie(o.v, o.s); }\n"
        "  bool operator==(const Key &o) const { return v == o.v && s == o.s; } };\n"
        "template <int I> struct KeyHash { size_t operator()(const Key<I> &k) const {\n"
        "  return std::hash<int>()(k.v) ^ std::hash<std::string>()(k.s); } };\n"
        "template <int I, int D> struct Depth { static constexpr long v = Depth<I, D - 1>::v * 3 + I; };\n"
        "template <int I> struct Depth<I, 0> { static constexpr long v = I; };\n"
        "template <int I> long work(int n) {\n"
        "  std::map<Key<I>, std::vector<std::tuple<int, double, std::string>>> m;\n"
        "  std::unordered_map<Key<I>, std::set<int>, KeyHash<I>> u;\n"
        "  std::function<long(long)> f = [&](long x) { return x + Depth<I, 12>::v; };\n"
        "  for (int i = 0; i < n; i++) {\n"
        "    Key<I> k{i % 17, std::to_string(i)};\n"
        "    m[k].emplace_back(i, i * 0.5, k.s);\n"
        "    u[k].insert(i);\n"
        "  }\n"
        "  std::vector<long> out;\n"
        "  for (auto &[k, v] : m) out.push_back(f(k.v + (long)v.size()));\n"
        "  std::sort(out.begin(), out.end(), std::greater<long>());\n"
        "  long s = std::accumulate(out.begin(), out.end(), 0L);\n"
        "  auto sp = std::make_shared<std::map<int, Key<I>>>();\n"
        "  for (auto &[k, v] : u) (*sp)[k.v] = k;\n"
        "  return s + (long)u.size() + (long)sp->size();\n"
        "}\n",
        f);
  for (int i = 0; i < n; i++) fprintf(f, "template long work<%d>(int);\n", i);
  fclose(f);
  char p0[PATH_MAX];
  snprintf(p0, sizeof p0, "%s", prog);
  char *argv[] = {p0, "-std=c++17", "-O1", "-c", "unit.cpp", "-o", "unit.o", NULL};
  double t = run_app(argv, NULL, "out.txt", ru);
  char o[PATH_MAX];
  struct stat st;
  tpath(o, sizeof o, "unit.o");
  if (stat(o, &st) != 0 || st.st_size < 1000) die("check failed: g++ wrote no unit.o");
  return t;
}

static double app_python(const char *prog, struct rusage *ru) {
  int n = quick ? 10000 : 60000;
  FILE *f = tcreate("work.py");
  fputs("import collections, json, sys\n"
        "N = int(sys.argv[1])\n"
        "class Rec:\n"
        "    def __init__(self, i):\n"
        "        self.i = i\n"
        "        self.name = 'r%d' % i\n"
        "        self.tags = [i % 7, i % 11, str(i % 13)]\n"
        "recs = [Rec(i) for i in range(N)]\n"
        "d = {r.name: r for r in recs}\n"
        "for i in range(0, N, 2):\n"
        "    del d['r%d' % i]\n"
        "assert sum(r.i for r in d.values()) == (N // 2) ** 2\n"
        "docs = [{'id': r.i, 'name': r.name, 'tags': r.tags,\n"
        "         'nested': {'a': r.i * 2, 'b': [r.name] * 3}} for r in recs[: N // 2]]\n"
        "text = json.dumps(docs)\n"
        "back = json.loads(text)\n"
        "assert back == docs\n"
        "c = collections.Counter(w for doc in back for w in doc['nested']['b'])\n"
        "assert len(c) == N // 2\n"
        "groups = collections.defaultdict(list)\n"
        "words = text.split(',')\n"
        "for w in words:\n"
        "    groups[len(w)].append(w.strip())\n"
        "assert sum(len(v) for v in groups.values()) == len(words)\n"
        "s = {}\n"
        "for r in recs:\n"
        "    s.setdefault(r.i % 1000, []).append((r.name, r.tags[2]))\n"
        "del recs, d, docs, back\n"
        "print('ok', N, len(text), len(groups), len(s))\n",
        f);
  fclose(f);
  char p0[PATH_MAX], ns[32];
  snprintf(p0, sizeof p0, "%s", prog);
  snprintf(ns, sizeof ns, "%d", n);
  char *argv[] = {p0, "work.py", ns, NULL};
  double t = run_app(argv, NULL, "out.txt", ru);
  char want[64];
  snprintf(want, sizeof want, "ok %d ", n);
  need("out.txt", want, "python3");
  return t;
}

static double app_sqlite(const char *prog, struct rusage *ru) {
  long n = quick ? 30000 : 200000;
  FILE *f = tcreate("work.sql");
  fprintf(f,
          "CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL);\n"
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %ld)\n"
          "INSERT INTO t SELECT x, (x * 7) %% 1000, printf('row-%%06d', x) FROM c;\n"
          "CREATE INDEX t_k ON t(k);\n"
          "CREATE INDEX t_v ON t(v);\n"
          "SELECT 'rows', count(*), sum(id) FROM t;\n"
          "SELECT 'k3', count(*) FROM t WHERE k = 3;\n"
          "UPDATE t SET v = v || '-u' WHERE id %% 10 = 0;\n"
          "DELETE FROM t WHERE id %% 3 = 0;\n"
          "CREATE TABLE g AS SELECT k %% 10 AS b, count(*) AS n, sum(id) AS s FROM t GROUP BY k %% 10;\n"
          "SELECT 'groups', count(*), sum(n) FROM g;\n"
          "SELECT 'join', count(*) FROM t a JOIN t b ON b.id = a.id + 1 WHERE a.k < 50;\n"
          "PRAGMA integrity_check;\n",
          n);
  fclose(f);
  char p0[PATH_MAX];
  snprintf(p0, sizeof p0, "%s", prog);
  char *argv[] = {p0, "-bail", ":memory:", NULL};
  double t = run_app(argv, "work.sql", "out.txt", ru);
  char want[96];
  snprintf(want, sizeof want, "rows|%ld|%ld", n, n * (n + 1) / 2);
  need("out.txt", want, "sqlite3");
  need("out.txt", "\nok", "sqlite3 integrity_check");
  return t;
}

/* job-shop: J jobs of M tasks, each job's tasks in order, one task at a
 * time per machine, makespan <= bound (3/2 of the average machine load:
 * satisfiable, about 0.5 s of search for z3 4.8 on the development VM) */
static double app_z3(const char *prog, struct rusage *ru) {
  int J = quick ? 9 : 12, M = quick ? 6 : 8;
  FILE *f = tcreate("jobshop.smt2");
  fputs("(set-logic QF_LIA)\n", f);
  int dur[32][32], mach[32][32];
  long total = 0;
  for (int j = 0; j < J; j++) {
    /* machine order: a permutation from the LCG */
    int perm[32];
    for (int m = 0; m < M; m++) perm[m] = m;
    for (int m = M - 1; m > 0; m--) {
      int k = (int)(lcg() % (unsigned)(m + 1)), t = perm[m];
      perm[m] = perm[k];
      perm[k] = t;
    }
    for (int m = 0; m < M; m++) {
      mach[j][m] = perm[m];
      dur[j][m] = 1 + (int)(lcg() % 9);
      total += dur[j][m];
      fprintf(f, "(declare-const s_%d_%d Int)\n(assert (>= s_%d_%d 0))\n", j, m, j, m);
    }
    for (int m = 1; m < M; m++)
      fprintf(f, "(assert (>= s_%d_%d (+ s_%d_%d %d)))\n", j, m, j, m - 1, dur[j][m - 1]);
  }
  long bound = quick ? total * 2 / M + 4 : total * 3 / (2 * M) + 4;
  for (int j = 0; j < J; j++)
    fprintf(f, "(assert (<= (+ s_%d_%d %d) %ld))\n", j, M - 1, dur[j][M - 1], bound);
  for (int a = 0; a < J; a++)
    for (int b = a + 1; b < J; b++)
      for (int x = 0; x < M; x++)
        for (int y = 0; y < M; y++)
          if (mach[a][x] == mach[b][y])
            fprintf(f, "(assert (or (<= (+ s_%d_%d %d) s_%d_%d) (<= (+ s_%d_%d %d) s_%d_%d)))\n", a, x,
                    dur[a][x], b, y, b, y, dur[b][y], a, x);
  fputs("(check-sat)\n", f);
  fclose(f);
  char p0[PATH_MAX];
  snprintf(p0, sizeof p0, "%s", prog);
  char *argv[] = {p0, "-smt2", "jobshop.smt2", NULL};
  double t = run_app(argv, NULL, "out.txt", ru);
  need("out.txt", "sat", "z3");
  return t;
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) die("socket: %s", strerror(errno));
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) die("bind: %s", strerror(errno));
  socklen_t l = sizeof a;
  getsockname(s, (struct sockaddr *)&a, &l);
  close(s);
  return ntohs(a.sin_port);
}

static int can_connect(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((unsigned short)port);
  int ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
  close(s);
  return ok;
}

static double app_redis(const char *prog, struct rusage *ru) {
  char client[PATH_MAX];
  if (!find_prog("redis-benchmark", client, sizeof client)) {
    printf("# skip: redis-benchmark not found (apt-get install redis-tools)\n");
    exit(0);
  }
  int requests = quick ? 2000 : 10000;
  pid_t srv = -1;
  int port = 0;
  for (int attempt = 0; attempt < 3 && srv < 0; attempt++) {
    port = free_port();
    char p0[PATH_MAX], ps[16];
    snprintf(p0, sizeof p0, "%s", prog);
    snprintf(ps, sizeof ps, "%d", port);
    char *argv[] = {p0, "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--dir", tmpdir, "--logfile", "", "--io-threads", "1",
                    NULL};
    pid_t pid = spawn(argv, app_env, NULL, "server.txt");
    double t0 = now_s();
    int up = 0, status;
    while (now_s() - t0 < 10) {
      if (waitpid(pid, &status, WNOHANG) == pid) break; /* died: port taken? */
      if (can_connect(port)) {
        up = 1;
        break;
      }
      struct timespec ts = {0, 5 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    if (up) srv = pid;
    else {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  if (srv < 0) {
    char *o = slurp("server.txt");
    fprintf(stderr, "%s\n", o);
    die("redis-server did not start");
  }
  char ps[16], nr[16];
  snprintf(ps, sizeof ps, "%d", port);
  snprintf(nr, sizeof nr, "%d", requests);
  char *cargv[] = {client, "-h", "127.0.0.1", "-p", ps, "-n", nr, "-c", "16", "-P", "8",
                   "-r", "100000", "-d", "100", "-q",
                   "-t", "set,get,lpush,lpop,sadd,hset,zadd,lrange_100,mset", NULL};
  pid_t c = spawn(cargv, plain_env, NULL, "client.txt");
  struct rusage cru;
  int cst = wait_for(c, &cru, 240);
  if (cst != 0) {
    kill(srv, SIGKILL);
    waitpid(srv, NULL, 0);
    check_status("redis-benchmark", cst, "client.txt");
  }
  need("client.txt", "LRANGE_100", "redis-benchmark");
  kill(srv, SIGTERM);
  int st = wait_for(srv, ru, 30);
  check_status("redis-server (after SIGTERM)", st, "server.txt");
  check_preload("server.txt");
  return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + (double)ru->ru_stime.tv_sec +
         ru->ru_stime.tv_usec / 1e6;
}

static const struct {
  const char *name, *prog, *package, *what;
  double (*run)(const char *prog, struct rusage *ru);
} apps[] = {
    {"gxx", "g++", "g++", "g++ -std=c++17 -O1 -c, a generated template-heavy unit", app_gxx},
    {"python", "python3", "python3", "python3, objects, dicts and json", app_python},
    {"sqlite", "sqlite3", "sqlite3", "sqlite3 :memory:, 200,000 rows built, indexed, updated, grouped", app_sqlite},
    {"redis", "redis-server", "redis-server", "redis-server under redis-benchmark (10,000 requests a test, 9 tests; server CPU time)", app_redis},
    {"z3", "z3", "z3", "z3 on a job-shop scheduling problem (QF_LIA)", app_z3},
};
#define NAPPS ((int)(sizeof apps / sizeof *apps))

static void rm_tree(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "bench-app: could not remove %s\n", tmpdir);
}

int main(int argc, char **argv) {
  const char *name = NULL;
  int keep = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--app") && i + 1 < argc) name = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else if (!strcmp(argv[i], "--list")) {
      for (int k = 0; k < NAPPS; k++) printf("%s\t%s\t%s\n", apps[k].name, apps[k].package, apps[k].what);
      return 0;
    } else {
      fprintf(stderr, "usage: bench-app --app NAME [--quick] [--keep] | --list\n");
      return 2;
    }
  }
  int k;
  for (k = 0; k < NAPPS && (!name || strcmp(apps[k].name, name)); k++) {
  }
  if (k == NAPPS) {
    fprintf(stderr, "bench-app: --app one of gxx python sqlite redis z3\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  char prog[PATH_MAX];
  if (!find_prog(apps[k].prog, prog, sizeof prog)) {
    printf("# skip: %s not found (apt-get install %s)\n", apps[k].prog, apps[k].package);
    return 0;
  }
  ssize_t n = readlink("/proc/self/exe", exe_dir, sizeof exe_dir - 1);
  if (n <= 0) die("readlink /proc/self/exe: %s", strerror(errno));
  exe_dir[n] = 0;
  *strrchr(exe_dir, '/') = 0;
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/bench-app.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) die("mkdtemp %s: %s", tmpdir, strerror(errno));
  make_envs();

  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  double secs = apps[k].run(prog, &ru);

  /* the application's processes, from libbench-appstat.so */
  char *tsv = slurp("appstat.tsv");
  long best_peak = -1, best_end = -1;
  char best_comm[64] = "", from[PATH_MAX] = "", call[256] = "", odd[PATH_MAX + 64] = "";
  int nproc = 0;
  for (char *save = NULL, *ln = strtok_r(tsv, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
    char *f[6], *s2 = NULL;
    int nf = 0;
    for (char *x = strtok_r(ln, "\t", &s2); x && nf < 6; x = strtok_r(NULL, "\t", &s2)) f[nf++] = x;
    if (nf < 6) continue;
    nproc++;
    long peak = atol(f[2]), end = atol(f[3]);
    if (!from[0]) snprintf(from, sizeof from, "%s", f[4]);
    else if (strcmp(from, f[4]) && !odd[0]) snprintf(odd, sizeof odd, "%s (in %s)", f[4], f[1]);
    if (peak > best_peak) {
      best_peak = peak;
      best_end = end;
      snprintf(best_comm, sizeof best_comm, "%s", f[1]);
      snprintf(call, sizeof call, "%s", f[5]);
    }
  }
  if (!nproc) die("no process of %s reported its figures (libbench-appstat.so not loaded?)", apps[k].prog);
  printf("# note: %s%s; peak-kB and end-kB of %s, the largest of %d process%s\n", apps[k].what,
         quick ? " (--quick: shrunk)" : "", best_comm, nproc, nproc == 1 ? "" : "es");
  printf("# scavenge: %s before end-kB (at the application's exit); no unassisted figure\n", call);
  printf("# malloc: %s\n", odd[0] ? odd : from);
  printf("Benchmarkapp_%s 1 %.0f ns/op %ld peak-kB %ld end-kB %ld faults\n", apps[k].name, secs * 1e9,
         best_peak, best_end, ru.ru_minflt);
  if (keep) fprintf(stderr, "bench-app: files kept in %s\n", tmpdir);
  else rm_tree();
  return 0;
}
