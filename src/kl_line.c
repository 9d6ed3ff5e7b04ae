/* kl_line.c: REPL line input; libedit (BSD licence) opened at run time, stdio otherwise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kl_internal.h"

/* libedit's readline-compatible entry points. */
static char *(*p_readline)(const char *);
static int (*p_add_history)(const char *);
static int (*p_read_history)(const char *);
static int (*p_write_history)(const char *);
static void (*p_using_history)(void);
static int (*p_stifle_history)(int);
static char history_path[4096];

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
  if (p_using_history) p_using_history();
  if (p_stifle_history) p_stifle_history(2000);
  if (history_path[0] && p_read_history) p_read_history(history_path);
  ok = 1;
  return ok;
}

char *kl_line_read(const char *prompt) {
  if (p_readline) return p_readline(prompt);
  fputs(prompt, stdout);
  fflush(stdout);
  size_t cap = 0;
  char *line = NULL;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return NULL;
  }
  if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
  return line;
}

void kl_line_add_history(const char *line) {
  if (p_add_history && line && *line) p_add_history(line);
}

int kl_line_save(void) {
  if (p_write_history && history_path[0]) return p_write_history(history_path) == 0 ? KL_OK : KL_ESYS;
  return KL_OK;
}
