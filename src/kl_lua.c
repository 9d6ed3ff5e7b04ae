/* kl_lua.c: the one binding layer: a LuaJIT state with the kloop library, cjson and
   Ctrl-C handling. The rest of the core never includes lua.h; Lua reaches it via the FFI. */
#define _GNU_SOURCE
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <luajit.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "kloop.h"
#include "kl_own.h"

int luaopen_cjson(lua_State *L);

extern const struct {
  const char *name;
  const unsigned char *data;
  size_t len;
} kl_embedded[];

static lua_State *globalL;
static volatile sig_atomic_t sigint_count;
static volatile sig_atomic_t sigint_held;  /* count Ctrl-C, raise nothing (a run closing) */
static volatile sig_atomic_t sigint_first; /* the signal that started the interruption */
static volatile sig_atomic_t signals_run;  /* a strategy runs: TERM and HUP stop it cleanly */
static double sigint_t0;                   /* CLOCK_MONOTONIC seconds of the first signal */

/* A repeat within this many seconds of the first signal is the same request: `timeout`
   signals the child and then its group, an impatient user presses twice. Later, while
   the first is still being handled, a repeat ends kloop the default way (a way out of a
   loop compiled into a trace, which never sees the hook). */
#define KL_SIGNAL_REPEAT_S 2.0

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ctrl-C: the hook raises a Lua error at the next instruction, so the running chunk
   unwinds through its pcall (strategy hooks finish cleanly, `done` still runs). Code
   running inside a compiled trace never sees the hook, so a second Ctrl-C before the
   first is served ends the process the default way. */
static void on_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  lua_getfield(L, LUA_REGISTRYINDEX, "kloop.interrupted");
  lua_error(L);
}

/* The Ctrl-C sentinel: one table, the error value of every interruption (the hook's, and
   kloop.core.sys.check_interrupt's), so Lua compares it instead of matching text. It
   prints as "interrupted" and concatenates as that text, as the old message did. */
static int l_interrupted_tostring(lua_State *L) {
  lua_pushliteral(L, "interrupted");
  return 1;
}

static int l_interrupted_concat(lua_State *L) {
  for (int i = 1; i <= 2; i++) {
    if (lua_istable(L, i)) {
      lua_pushliteral(L, "interrupted");
      lua_replace(L, i);
    } else if (!lua_isstring(L, i)) {
      return luaL_error(L, "attempt to concatenate a %s value", luaL_typename(L, i));
    }
  }
  lua_concat(L, 2);
  return 1;
}

static void push_interrupted(lua_State *L) {
  lua_newtable(L);
  lua_newtable(L);
  lua_pushcfunction(L, l_interrupted_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, l_interrupted_concat);
  lua_setfield(L, -2, "__concat");
  lua_pushliteral(L, "kloop.interrupted");
  lua_setfield(L, -2, "__name");
  lua_setmetatable(L, -2);
}

static void install_signals(void);

static void on_sigint(int sig) {
  if (sig != SIGINT && !signals_run) {
    /* TERM or HUP outside a strategy run: the default action, as before */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  double now = mono_now();
  if (sigint_count > 0) {
    if (sigint_count < 1000) sigint_count++;
    if (now - sigint_t0 < KL_SIGNAL_REPEAT_S) return; /* the same request again: nothing changes */
    /* asked again later while the first is still handled: end kloop by this signal */
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  sigint_count = 1;
  sigint_first = sig;
  sigint_t0 = now;
  if (globalL && !sigint_held) lua_sethook(globalL, on_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: the three never interleave */
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

int kl_sigint_pending(void) { return (int)sigint_count; }
int kl_sigint_signal(void) { return sigint_count > 0 ? (int)sigint_first : 0; }

/* native.signals_run(on): while a strategy runs, SIGTERM and SIGHUP are handled like
   Ctrl-C (a scheduler's TERM stops the run cleanly); outside, they act as by default. */
static int l_signals_run(lua_State *L) {
  signals_run = lua_toboolean(L, 1);
  return 0;
}

/* kloop._sigint_reset(): the REPL calls it when a prompt begins. */
static int l_sigint_reset(lua_State *L) {
  int had = (int)sigint_count;
  sigint_count = 0;
  sigint_first = 0;
  sigint_held = 0;
  install_signals();
  lua_sethook(L, NULL, 0, 0);
  lua_pushinteger(L, had);
  return 1;
}

/* native.sigint_hold(on): while held, Ctrl-C is only counted (a repeat more than
   KL_SIGNAL_REPEAT_S after the first still ends kloop): a run that is closing (done
   hook, store, summary) finishes its bookkeeping. */
static int l_sigint_hold(lua_State *L) {
  sigint_held = lua_toboolean(L, 1);
  if (sigint_held) lua_sethook(L, NULL, 0, 0);
  return 0;
}

static int l_embedded(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  for (size_t i = 0; kl_embedded[i].name; i++)
    if (strcmp(kl_embedded[i].name, name) == 0) {
      lua_pushlstring(L, (const char *)kl_embedded[i].data, kl_embedded[i].len);
      return 1;
    }
  return 0;
}

/* own_binary(key): the shipped binary of one of kloop's own kernels and its compile's
   log (kl_own.h), or nothing. */
static int l_own_binary(lua_State *L) {
  const char *key = luaL_checkstring(L, 1);
  for (size_t i = 0; kl_own_kernels[i].key; i++)
    if (strcmp(kl_own_kernels[i].key, key) == 0) {
      lua_pushlstring(L, (const char *)kl_own_kernels[i].cubin, kl_own_kernels[i].cubin_len);
      lua_pushstring(L, kl_own_kernels[i].log);
      return 2;
    }
  return 0;
}

/* own_binary_count(): how many binaries the build shipped. */
static int l_own_binary_count(lua_State *L) {
  size_t n = 0;
  while (kl_own_kernels[n].key) n++;
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int l_embedded_list(lua_State *L) {
  lua_newtable(L);
  for (size_t i = 0; kl_embedded[i].name; i++) {
    lua_pushstring(L, kl_embedded[i].name);
    lua_rawseti(L, -2, (int)i + 1);
  }
  return 1;
}

static int file_exists(const char *p) { return access(p, R_OK) == 0; }

/* Where lua/kloop lives on disk, if anywhere: files there win over the embedded copy so
   edits in a source tree apply without a rebuild. */
static void find_lua_dir(char *out, size_t n) {
  out[0] = 0;
  const char *env = getenv("KLOOP_LUA_DIR");
  char probe[PATH_MAX + 64];
  if (getenv("KLOOP_EMBEDDED_ONLY")) return;
  if (env && *env) {
    snprintf(out, n, "%s", env);
    return;
  }
  char exe[PATH_MAX - 64];
  if (kl_exe_path(exe, sizeof exe) == KL_OK) {
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = 0;
      snprintf(probe, sizeof probe, "%s/../lua/kloop/init.lua", exe);
      if (file_exists(probe)) {
        snprintf(out, n, "%s/../lua", exe);
        return;
      }
    }
  }
  snprintf(probe, sizeof probe, "%s/lua/kloop/init.lua", KLOOP_SOURCE_DIR);
  if (file_exists(probe)) snprintf(out, n, "%s/lua", KLOOP_SOURCE_DIR);
}

/* Installs the kloop searcher ahead of the standard ones. */
static const char *bootstrap =
  "local lua_dir, embedded = ...\n"
  "local function search(name)\n"
  "  if name ~= 'kloop' and name:sub(1, 6) ~= 'kloop.' then return nil end\n"
  "  local rel = name == 'kloop' and 'init' or name:sub(7):gsub('%.', '/')\n"
  "  if lua_dir ~= '' then\n"
  "    local path = lua_dir .. '/kloop/' .. rel .. '.lua'\n"
  "    local f = io.open(path, 'r')\n"
  "    if f then f:close(); return assert(loadfile(path)) end\n"
  "  end\n"
  "  local src = embedded(name)\n"
  "  if src then return assert(loadstring(src, '@[kloop]/' .. rel .. '.lua')) end\n"
  "  return '\\n\\tno kloop module ' .. name .. ' (embedded or in ' .. (lua_dir ~= '' and lua_dir or 'no source tree') .. ')'\n"
  "end\n"
  "table.insert(package.loaders, 2, search)\n";

static int traceback(lua_State *L) {
  if (!lua_isstring(L, 1)) return 1; /* error objects (tables) pass through untouched */
  lua_getfield(L, LUA_GLOBALSINDEX, "debug");
  lua_getfield(L, -1, "traceback");
  lua_pushvalue(L, 1);
  lua_pushinteger(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

int kl_lua_main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN); /* a dead worker's pipe must give EPIPE, not kill us */
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "kloop: cannot create a Lua state (out of memory)\n");
    return 1;
  }
  luaL_openlibs(L);
  /* cjson is linked statically and preloaded, so `require "cjson"` never touches disk. */
  lua_getfield(L, LUA_GLOBALSINDEX, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pop(L, 2);

  char lua_dir[PATH_MAX];
  find_lua_dir(lua_dir, sizeof lua_dir);
  if (luaL_loadbuffer(L, bootstrap, strlen(bootstrap), "=[kloop bootstrap]") != 0) {
    fprintf(stderr, "kloop: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_pushstring(L, lua_dir);
  lua_pushcfunction(L, l_embedded);
  if (lua_pcall(L, 2, 0, 0) != 0) {
    fprintf(stderr, "kloop: %s\n", lua_tostring(L, -1));
    return 1;
  }

  /* The C-side hooks the Lua library needs that the FFI cannot provide. */
  lua_newtable(L);
  lua_pushcfunction(L, l_embedded);
  lua_setfield(L, -2, "embedded");
  lua_pushcfunction(L, l_embedded_list);
  lua_setfield(L, -2, "embedded_list");
  lua_pushcfunction(L, l_own_binary);
  lua_setfield(L, -2, "own_binary");
  lua_pushcfunction(L, l_own_binary_count);
  lua_setfield(L, -2, "own_binary_count");
  lua_pushcfunction(L, l_sigint_reset);
  lua_setfield(L, -2, "sigint_reset");
  lua_pushcfunction(L, l_sigint_hold);
  lua_setfield(L, -2, "sigint_hold");
  lua_pushcfunction(L, l_signals_run);
  lua_setfield(L, -2, "signals_run");
  lua_pushstring(L, lua_dir);
  lua_setfield(L, -2, "lua_dir");
  lua_pushstring(L, KLOOP_SOURCE_DIR);
  lua_setfield(L, -2, "source_dir");
  push_interrupted(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, "kloop.interrupted");
  lua_setfield(L, -2, "INTERRUPTED");
  lua_setfield(L, LUA_REGISTRYINDEX, "kloop.native");
  lua_getfield(L, LUA_GLOBALSINDEX, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, LUA_REGISTRYINDEX, "kloop.native");
  lua_setfield(L, -2, "kloop.native");
  lua_pop(L, 2);

  globalL = L;
  install_signals();

  lua_pushcfunction(L, traceback);
  lua_getfield(L, LUA_GLOBALSINDEX, "require");
  lua_pushstring(L, "kloop.cli.main");
  int status = lua_pcall(L, 1, 1, -3);
  if (status == 0) {
    lua_getfield(L, -1, "main");
    lua_newtable(L);
    for (int i = 1; i < argc; i++) {
      lua_pushstring(L, argv[i]);
      lua_rawseti(L, -2, i);
    }
    status = lua_pcall(L, 1, 1, -4);
  }
  int rc;
  if (status != 0) {
    /* cli.main handles script errors itself; reaching here means kloop's own library broke. */
    const char *msg = lua_tostring(L, -1);
    lua_getfield(L, LUA_REGISTRYINDEX, "kloop.interrupted");
    if (!msg && lua_rawequal(L, -1, -2)) msg = "interrupted";
    lua_pop(L, 1);
    fprintf(stderr, "kloop: internal error: %s\n", msg ? msg : "(error object is not a string)");
    rc = 1;
  } else {
    rc = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  }
  globalL = NULL;
  fflush(stdout);
  lua_close(L);
  return rc;
}
