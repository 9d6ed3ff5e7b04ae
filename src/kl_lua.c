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
#include <unistd.h>
#include "kloop.h"

int luaopen_cjson(lua_State *L);

extern const struct { const char *name; const unsigned char *data; size_t len; } kl_embedded[];

static lua_State *globalL;
static volatile sig_atomic_t sigint_count;
static volatile sig_atomic_t sigint_held; /* count Ctrl-C, raise nothing (a run closing) */

/* Ctrl-C: the hook raises a Lua error at the next instruction, so the running chunk
   unwinds through its pcall (strategy hooks finish cleanly, `done` still runs). Code
   running inside a compiled trace never sees the hook, so a second Ctrl-C before the
   first is served ends the process the default way. */
static void on_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

static void on_sigint(int sig) {
  (void)sig;
  if (++sigint_count >= 2) {
    /* a second Ctrl-C ends kloop the default way (exit status 130 in a shell); where a
       chunk is still running, in a compiled trace that never sees the hook, a third does */
    signal(SIGINT, SIG_DFL);
    if (sigint_held) raise(SIGINT);
  }
  if (globalL && !sigint_held) lua_sethook(globalL, on_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

int kl_sigint_pending(void) { return (int)sigint_count; }

/* kloop._sigint_reset(): the REPL calls it when a prompt begins. */
static int l_sigint_reset(lua_State *L) {
  int had = (int)sigint_count;
  sigint_count = 0;
  sigint_held = 0;
  signal(SIGINT, on_sigint);
  lua_sethook(L, NULL, 0, 0);
  lua_pushinteger(L, had);
  return 1;
}

/* native.sigint_hold(on): while held, Ctrl-C is only counted (a second one still ends
   kloop): a run that is closing (done hook, store, summary) finishes its bookkeeping. */
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
  lua_pushcfunction(L, l_sigint_reset);
  lua_setfield(L, -2, "sigint_reset");
  lua_pushcfunction(L, l_sigint_hold);
  lua_setfield(L, -2, "sigint_hold");
  lua_pushstring(L, lua_dir);
  lua_setfield(L, -2, "lua_dir");
  lua_pushstring(L, KLOOP_SOURCE_DIR);
  lua_setfield(L, -2, "source_dir");
  lua_setfield(L, LUA_REGISTRYINDEX, "kloop.native");
  lua_getfield(L, LUA_GLOBALSINDEX, "package");
  lua_getfield(L, -1, "loaded");
  lua_getfield(L, LUA_REGISTRYINDEX, "kloop.native");
  lua_setfield(L, -2, "kloop.native");
  lua_pop(L, 2);

  globalL = L;
  signal(SIGINT, on_sigint);

  lua_pushcfunction(L, traceback);
  lua_getfield(L, LUA_GLOBALSINDEX, "require");
  lua_pushstring(L, "kloop.cli");
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
