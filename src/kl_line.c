/* kl_line.c: REPL line input; libedit (BSD licence) opened at run time, stdio otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kl_internal.h"

/* libedit's readline-compatible entry points. */
static char *(*p_readline)(const char *);
static int (*p_add_history)(const char *);
static int (*p_read_history)(const char *);
static int (*p_write_history)(const char *);
static void (*p_using_history)(void);
static int (*p_stifle_history)(int);
static char history_path[4096];

/* Ctrl-C at the prompt belongs to the line reader, not to the Lua state: while a line
   is read, SIGINT only sets this flag (no SA_RESTART, so the read returns EINTR) and
   the reader gives up the line; the binding layer's handler is back once it returns. */
static volatile sig_atomic_t line_sigint;
static int line_interrupted;

static void on_line_sigint(int sig) {
  (void)sig;
  line_sigint = 1;
}

/* One byte of input for libedit; EOF at Ctrl-C (another signal's EINTR is retried). */
static int line_getc(FILE *f) {
  unsigned char c;
  for (;;) {
    if (line_sigint) return EOF;
    ssize_t n = read(fileno(f), &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR) continue;
    return EOF;
  }
}

int kl_line_init(const char *path) {
  static int done = 0, ok = 0;
  if (path) snprintf(history_path, sizeof history_path, "%s", path);
  if (done) return ok;
  done = 1;
  if (getenv("KLOOP_NO_LINEEDIT")) return 0;
  const char *names[] = {"libedit.so.2", "libedit.so", NULL};
  void *h = NULL;
  for (int i = 0; names[i] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  p_readline = (char *(*)(const char *))dlsym(h, "readline");
  p_add_history = (int (*)(const char *))dlsym(h, "add_history");
  p_read_history = (int (*)(const char *))dlsym(h, "read_history");
  p_write_history = (int (*)(const char *))dlsym(h, "write_history");
  p_using_history = (void (*)(void))dlsym(h, "using_history");
  p_stifle_history = (int (*)(int))dlsym(h, "stifle_history");
  if (!p_readline || !p_add_history) return 0;
  /* libedit reads through line_getc, which gives up at Ctrl-C (its own reader retries
     a read that a signal interrupted), and leaves the signals to kloop. Both are set
     before using_history, which initializes libedit. */
  int (**getc_fn)(FILE *) = (int (**)(FILE *))dlsym(h, "rl_getc_function");
  int *catch_signals = (int *)dlsym(h, "rl_catch_signals");
  if (getc_fn) *getc_fn = line_getc;
  if (catch_signals) *catch_signals = 0;
  if (p_using_history) p_using_history();
  if (p_stifle_history) p_stifle_history(2000);
  if (history_path[0] && p_read_history) p_read_history(history_path);
  ok = 1;
  return ok;
}

int kl_line_interrupted(void) { return line_interrupted; }

static char *read_stdio(const char *prompt) {
  fputs(prompt, stdout);
  fflush(stdout);
  size_t cap = 0;
  char *line = NULL;
  ssize_t n = line_sigint ? -1 : getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    if (line_sigint) clearerr(stdin); /* EINTR is not the end of the input */
    return NULL;
  }
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
  return line;
}

char *kl_line_read(const char *prompt) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_line_sigint;
  sigemptyset(&sa.sa_mask);
  line_sigint = 0;
  line_interrupted = 0;
  sigaction(SIGINT, &sa, &old);
  char *line = p_readline ? p_readline(prompt) : read_stdio(prompt);
  sigaction(SIGINT, &old, NULL);
  if (line_sigint) {
    /* libedit hands back what was typed before the Ctrl-C: it is dropped */
    free(line);
    line = NULL;
    line_interrupted = 1;
    /* the terminal shows ^C itself when it echoes; libedit's raw mode does not */
    fputs(p_readline ? "^C\n" : "\n", stdout);
    fflush(stdout);
  }
  return line;
}

void kl_line_add_history(const char *line) {
  if (p_add_history && line && *line) p_add_history(line);
}

int kl_line_save(void) {
  if (p_write_history && history_path[0]) return p_write_history(history_path) == 0 ? KL_OK : KL_ESYS;
  return KL_OK;
}
