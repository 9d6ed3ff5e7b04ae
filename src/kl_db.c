/* kl_db.c: SQLite behind the kl_db/kl_stmt contract of kloop.h. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kl_internal.h"

struct kl_db {
  sqlite3 *h;
};
struct kl_stmt {
  sqlite3_stmt *s;
  sqlite3 *h;
};

static int db_fail(kl_err *err, sqlite3 *h, int rc, const char *what) {
  return kl_fail(err, KL_ESYS, rc, "%s: %s", what, h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
}

/* "file:" URI of a path for immutable=1: '%', '?', '#' and bytes outside printable
   ASCII percent-encoded; a path starting with '/' gets an empty authority. */
static char *file_uri(const char *path, const char *query) {
  size_t n = strlen(path), cap = 16 + 3 * n + strlen(query);
  char *u = malloc(cap);
  if (!u) return NULL;
  size_t k = (size_t)snprintf(u, cap, "file:%s", path[0] == '/' ? "//" : "");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p <= 0x20 || *p >= 0x7f)
      k += (size_t)snprintf(u + k, cap - k, "%%%02X", *p);
    else u[k++] = (char)*p;
  }
  snprintf(u + k, cap - k, "?%s", query);
  return u;
}

int kl_db_open(const char *path, int flags, kl_db **out, kl_err *err) {
  *out = NULL;
  sqlite3 *h = NULL;
  int readonly = (flags & (KL_DB_READONLY | KL_DB_IMMUTABLE)) != 0;
  int oflags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  char *uri = NULL;
  if (flags & KL_DB_IMMUTABLE) {
    uri = file_uri(path, "immutable=1");
    if (!uri) return kl_fail(err, KL_ENOMEM, 0, "out of memory");
    oflags |= SQLITE_OPEN_URI;
  }
  int rc = sqlite3_open_v2(uri ? uri : path, &h, oflags | SQLITE_OPEN_NOMUTEX, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    int st = kl_fail(err, KL_ESYS, rc, "cannot open database %s: %s", path,
                     h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
    sqlite3_close(h);
    return st;
  }
  sqlite3_busy_timeout(h, 10000);
  /* WAL + FULL: a kill -9 at any moment loses nothing that was committed. A read-only
     connection sets nothing that writes (journal_mode would). */
  const char *pragmas = readonly || (flags & KL_DB_NO_SETUP)
                          ? "PRAGMA foreign_keys=ON;"
                          : "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;";
  char *msg = NULL;
  rc = sqlite3_exec(h, pragmas, NULL, NULL, &msg);
  if (rc != SQLITE_OK) {
    int st = kl_fail(err, KL_ESYS, rc, "cannot set up database %s: %s", path, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    sqlite3_close(h);
    return st;
  }
  kl_db *db = malloc(sizeof *db);
  if (!db) {
    sqlite3_close(h);
    return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  }
  db->h = h;
  *out = db;
  return KL_OK;
}

int kl_db_close(kl_db *db) {
  if (!db) return KL_OK;
  int rc = sqlite3_close_v2(db->h);
  free(db);
  return rc == SQLITE_OK ? KL_OK : KL_ESYS;
}

int kl_db_exec(kl_db *db, const char *sql, kl_err *err) {
  char *msg = NULL;
  int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK) {
    int st = kl_fail(err, KL_ESYS, rc, "%s", msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return st;
  }
  return KL_OK;
}

int64_t kl_db_last_insert_rowid(kl_db *db) { return sqlite3_last_insert_rowid(db->h); }
int kl_db_changes(kl_db *db) { return sqlite3_changes(db->h); }

int kl_db_prepare(kl_db *db, const char *sql, kl_stmt **out, kl_err *err) {
  *out = NULL;
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
  if (rc != SQLITE_OK) return db_fail(err, db->h, rc, "prepare");
  kl_stmt *st = malloc(sizeof *st);
  if (!st) {
    sqlite3_finalize(s);
    return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  }
  st->s = s;
  st->h = db->h;
  *out = st;
  return KL_OK;
}

int kl_stmt_bind_int64(kl_stmt *st, int i, int64_t v) { return sqlite3_bind_int64(st->s, i, v); }
int kl_stmt_bind_double(kl_stmt *st, int i, double v) { return sqlite3_bind_double(st->s, i, v); }
int kl_stmt_bind_text(kl_stmt *st, int i, const char *s, size_t n) {
  return sqlite3_bind_text64(st->s, i, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}
int kl_stmt_bind_blob(kl_stmt *st, int i, const void *p, size_t n) {
  return sqlite3_bind_blob64(st->s, i, p, n, SQLITE_TRANSIENT);
}
int kl_stmt_bind_null(kl_stmt *st, int i) { return sqlite3_bind_null(st->s, i); }

int kl_stmt_step(kl_stmt *st, int *has_row, kl_err *err) {
  int rc = sqlite3_step(st->s);
  if (rc == SQLITE_ROW) {
    *has_row = 1;
    return KL_OK;
  }
  *has_row = 0;
  if (rc == SQLITE_DONE) return KL_OK;
  return db_fail(err, st->h, rc, "step");
}

int kl_stmt_column_count(kl_stmt *st) { return sqlite3_column_count(st->s); }
const char *kl_stmt_column_name(kl_stmt *st, int i) { return sqlite3_column_name(st->s, i); }
int kl_stmt_column_type(kl_stmt *st, int i) {
  switch (sqlite3_column_type(st->s, i)) {
  case SQLITE_INTEGER: return KL_COL_INTEGER;
  case SQLITE_FLOAT: return KL_COL_FLOAT;
  case SQLITE_TEXT: return KL_COL_TEXT;
  case SQLITE_BLOB: return KL_COL_BLOB;
  default: return KL_COL_NULL;
  }
}
int64_t kl_stmt_column_int64(kl_stmt *st, int i) { return sqlite3_column_int64(st->s, i); }
double kl_stmt_column_double(kl_stmt *st, int i) { return sqlite3_column_double(st->s, i); }
const char *kl_stmt_column_text(kl_stmt *st, int i, size_t *n) {
  /* blob or text: the bytes, valid until the next step/reset */
  const void *p = sqlite3_column_type(st->s, i) == SQLITE_BLOB ? sqlite3_column_blob(st->s, i)
                                                               : (const void *)sqlite3_column_text(st->s, i);
  if (n) *n = (size_t)sqlite3_column_bytes(st->s, i);
  return p;
}
int kl_stmt_reset(kl_stmt *st) {
  sqlite3_clear_bindings(st->s);
  return sqlite3_reset(st->s);
}
void kl_stmt_finalize(kl_stmt *st) {
  if (!st) return;
  sqlite3_finalize(st->s);
  free(st);
}
