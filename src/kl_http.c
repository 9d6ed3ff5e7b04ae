/* kl_http.c: many HTTP POSTs in flight at once over libcurl's multi interface, one result at a time. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "kl_internal.h"

/*
 * Ownership: a kl_http owns every request added to it (its easy handle, header list,
 * copy of the body and the growing response buffer). kl_http_poll hands a finished
 * request's body to the caller inside kl_http_result (free it with
 * kl_http_result_free) and frees the rest. kl_http_free cancels whatever is still in
 * flight. Nothing here calls back into Lua: the caller pulls.
 *
 * Secrets: request headers (which carry API keys) are copied into a curl_slist and
 * freed when the request ends; they never appear in error text (curl's own messages
 * name hosts and causes, not headers), and verbose output is never enabled.
 *
 * Failure behaviour: every function returns a kl_status and fills kl_err; a transfer
 * that fails (refused, reset, timed out, body too large) is still a *result* with
 * curl_code != 0 and the curl error text, so the caller decides about retries.
 *
 * Limits (kl_http_post_ex): connect and total through curl; first byte (the model may
 * think for minutes before the status line) and idle (the reply started, then stopped)
 * checked here on every poll, since curl's low-speed limit cannot tell the two apart.
 */

#define KL_HTTP_BODY_MAX ((size_t)64 << 20) /* a reply larger than this is cut off as an error */
#define KL_HTTP_CONNECT_MAX_MS 15000
#define KL_HTTP_TICK_MS 250 /* poll wakes at least this often to check first-byte and idle limits */

typedef struct kl_http_req {
  int64_t id;
  CURL *easy;
  struct curl_slist *headers;
  char *buf;
  size_t len, cap;
  int too_big;
  size_t max_body;
  int first_byte_ms, idle_ms; /* 0: none; checked by kl_http_poll (curl has no such limit) */
  double t_start, t_last;     /* kl_now() at post, at the last byte received */
  int got_first;              /* a byte of the reply (status line included) has arrived */
  double retry_after_ms;      /* -1 when the server sent none */
  char request_id[128];
  char errbuf[CURL_ERROR_SIZE];
  struct kl_http_req *next;
} kl_http_req;

struct kl_http {
  CURLM *multi;
  kl_http_req *reqs; /* every request not yet returned by kl_http_poll */
  int64_t next_id;
  int running;
};

static int g_curl_ready = 0;

static int ensure_global(kl_err *err) {
  if (g_curl_ready) return KL_OK;
  CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) return kl_fail(err, KL_ESYS, (int)rc, "curl_global_init: %s", curl_easy_strerror(rc));
  g_curl_ready = 1;
  return KL_OK;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp) {
  kl_http_req *r = userp;
  size_t n = size * nmemb;
  r->got_first = 1;
  r->t_last = kl_now();
  if (r->len + n > r->max_body) {
    r->too_big = 1;
    return 0; /* curl aborts the transfer with CURLE_WRITE_ERROR */
  }
  if (r->len + n + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 16384;
    while (cap < r->len + n + 1) cap *= 2;
    char *nb = realloc(r->buf, cap);
    if (!nb) return 0;
    r->buf = nb;
    r->cap = cap;
  }
  memcpy(r->buf + r->len, data, n);
  r->len += n;
  r->buf[r->len] = 0;
  return n;
}

/* Trims a header value in place (no allocation), returns its start and length. */
static const char *header_value(const char *line, size_t n, size_t name_len, size_t *vlen) {
  const char *v = line + name_len;
  const char *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
  *vlen = (size_t)(end - v);
  return v;
}

/* Copies a header's trimmed value into buf as a C string: 1, or 0 when it is empty or
   does not fit. */
static int header_text(const char *line, size_t n, size_t name_len, char *buf, size_t cap) {
  size_t vlen;
  const char *v = header_value(line, n, name_len, &vlen);
  if (vlen == 0 || vlen >= cap) return 0;
  memcpy(buf, v, vlen);
  buf[vlen] = 0;
  return 1;
}

/* Picks out the headers the retry policy and audit need: retry-after (seconds or an
   HTTP date), retry-after-ms, and a request id. A new response (after a 100 or a
   redirect) starts over. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *userp) {
  kl_http_req *r = userp;
  size_t n = size * nmemb;
  char tmp[256];
  size_t vlen;
  r->got_first = 1;
  r->t_last = kl_now();
  if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    r->retry_after_ms = -1;
    r->request_id[0] = 0;
  } else if (n > 15 && strncasecmp(line, "retry-after-ms:", 15) == 0) {
    if (header_text(line, n, 15, tmp, sizeof tmp)) {
      char *endp;
      double ms = strtod(tmp, &endp);
      if (endp != tmp && ms >= 0) r->retry_after_ms = ms; /* the finer header wins */
    }
  } else if (n > 12 && strncasecmp(line, "retry-after:", 12) == 0) {
    if (header_text(line, n, 12, tmp, sizeof tmp)) {
      char *endp;
      double s = strtod(tmp, &endp);
      double ms = -1;
      if (endp != tmp && *endp == 0 && s >= 0) {
        ms = s * 1000.0;
      } else {
        time_t when = curl_getdate(tmp, NULL);
        if (when != (time_t)-1) {
          double d = difftime(when, time(NULL));
          ms = d > 0 ? d * 1000.0 : 0;
        }
      }
      /* retry-after-ms, when present, is more precise: keep it */
      if (ms >= 0 && r->retry_after_ms < 0) r->retry_after_ms = ms;
    }
  } else if ((n > 13 && strncasecmp(line, "x-request-id:", 13) == 0) ||
             (n > 11 && strncasecmp(line, "request-id:", 11) == 0)) {
    size_t nl = line[0] == 'x' || line[0] == 'X' ? 13 : 11;
    const char *v = header_value(line, n, nl, &vlen);
    if (vlen >= sizeof r->request_id) vlen = sizeof r->request_id - 1;
    memcpy(r->request_id, v, vlen);
    r->request_id[vlen] = 0;
  }
  return n;
}

static void req_free(kl_http_req *r) {
  if (!r) return;
  if (r->easy) curl_easy_cleanup(r->easy);
  curl_slist_free_all(r->headers);
  free(r->buf);
  free(r);
}

/* Unlinks a request from the client's list; returns it (or NULL). */
static kl_http_req *unlink_req(kl_http *c, kl_http_req *target, int64_t id) {
  for (kl_http_req **pp = &c->reqs; *pp; pp = &(*pp)->next) {
    if (*pp == target || (!target && (*pp)->id == id)) {
      kl_http_req *r = *pp;
      *pp = r->next;
      r->next = NULL;
      return r;
    }
  }
  return NULL;
}

int kl_http_new(kl_http **out, kl_err *err) {
  *out = NULL;
  int st = ensure_global(err);
  if (st != KL_OK) return st;
  kl_http *c = calloc(1, sizeof *c);
  if (!c) return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  c->multi = curl_multi_init();
  if (!c->multi) {
    free(c);
    return kl_fail(err, KL_ESYS, 0, "curl_multi_init failed");
  }
  c->next_id = 1;
  *out = c;
  return KL_OK;
}

void kl_http_free(kl_http *c) {
  if (!c) return;
  while (c->reqs) {
    kl_http_req *r = c->reqs;
    c->reqs = r->next;
    curl_multi_remove_handle(c->multi, r->easy);
    req_free(r);
  }
  curl_multi_cleanup(c->multi);
  free(c);
}

int kl_http_post(kl_http *c, const char *url, const char *const *headers, int nheaders, const char *body,
                 size_t body_len, int timeout_ms, int64_t *id, kl_err *err) {
  kl_http_limits lim = {0};
  if (timeout_ms > 0) {
    lim.total_ms = timeout_ms;
    lim.connect_ms = timeout_ms < KL_HTTP_CONNECT_MAX_MS ? timeout_ms : KL_HTTP_CONNECT_MAX_MS;
  }
  return kl_http_post_ex(c, url, headers, nheaders, body, body_len, &lim, id, err);
}

int kl_http_post_ex(kl_http *c, const char *url, const char *const *headers, int nheaders, const char *body,
                    size_t body_len, const kl_http_limits *lim, int64_t *id, kl_err *err) {
  if (id) *id = 0;
  if (!c || !url || !*url || (!body && body_len))
    return kl_fail(err, KL_EINVAL, 0, "kl_http_post: bad arguments");
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
    return kl_fail(err, KL_EINVAL, 0, "not an http(s) URL: %.200s", url);
  kl_http_req *r = calloc(1, sizeof *r);
  if (!r) return kl_fail(err, KL_ENOMEM, 0, "out of memory");
  r->retry_after_ms = -1;
  r->max_body = lim && lim->max_body > 0 ? lim->max_body : KL_HTTP_BODY_MAX;
  r->first_byte_ms = lim && lim->first_byte_ms > 0 ? lim->first_byte_ms : 0;
  r->idle_ms = lim && lim->idle_ms > 0 ? lim->idle_ms : 0;
  r->t_start = r->t_last = kl_now();
  r->easy = curl_easy_init();
  if (!r->easy) {
    free(r);
    return kl_fail(err, KL_ESYS, 0, "curl_easy_init failed");
  }
  for (int i = 0; i < nheaders; i++) {
    if (!headers[i]) continue;
    struct curl_slist *nl = curl_slist_append(r->headers, headers[i]);
    if (!nl) {
      req_free(r);
      return kl_fail(err, KL_ENOMEM, 0, "out of memory");
    }
    r->headers = nl;
  }
  /* No "Expect: 100-continue" round trip for big prompts. */
  struct curl_slist *nl = curl_slist_append(r->headers, "Expect:");
  if (nl) r->headers = nl;

  CURL *e = r->easy;
  CURLcode rc = CURLE_OK;
#define SETOPT(o, v) \
  if (rc == CURLE_OK) rc = curl_easy_setopt(e, o, v)
  SETOPT(CURLOPT_URL, url);
  SETOPT(CURLOPT_NOSIGNAL, 1L);
  SETOPT(CURLOPT_POST, 1L);
  SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
  SETOPT(CURLOPT_COPYPOSTFIELDS, body ? body : "");
  SETOPT(CURLOPT_HTTPHEADER, r->headers);
  SETOPT(CURLOPT_WRITEFUNCTION, on_body);
  SETOPT(CURLOPT_WRITEDATA, r);
  SETOPT(CURLOPT_HEADERFUNCTION, on_header);
  SETOPT(CURLOPT_HEADERDATA, r);
  SETOPT(CURLOPT_ERRORBUFFER, r->errbuf);
  SETOPT(CURLOPT_PRIVATE, r);
  SETOPT(CURLOPT_ACCEPT_ENCODING, "");
  SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
  if (lim && lim->total_ms > 0) SETOPT(CURLOPT_TIMEOUT_MS, (long)lim->total_ms);
  if (lim && lim->connect_ms > 0) SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)lim->connect_ms);
#undef SETOPT
  if (rc != CURLE_OK) {
    int st = kl_fail(err, KL_EINVAL, (int)rc, "curl option: %s", curl_easy_strerror(rc));
    req_free(r);
    return st;
  }
  CURLMcode mc = curl_multi_add_handle(c->multi, e);
  if (mc != CURLM_OK) {
    int st = kl_fail(err, KL_ESYS, (int)mc, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
    req_free(r);
    return st;
  }
  r->id = c->next_id++;
  r->next = c->reqs;
  c->reqs = r;
  if (id) *id = r->id;
  return KL_OK;
}

/* Moves one finished transfer into res; 1 when one was found. */
static int take_finished(kl_http *c, kl_http_result *res) {
  int left;
  CURLMsg *m;
  while ((m = curl_multi_info_read(c->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL *e = m->easy_handle;
    CURLcode code = m->data.result;
    kl_http_req *r = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
    curl_multi_remove_handle(c->multi, e);
    if (!r || !unlink_req(c, r, 0)) continue; /* cancelled meanwhile */
    long status = 0;
    double total = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &total);
    res->id = r->id;
    res->status = (int)status;
    res->curl_code = (int)code;
    res->total_s = total;
    res->retry_after_ms = r->retry_after_ms;
    snprintf(res->request_id, sizeof res->request_id, "%s", r->request_id);
    if (code == CURLE_OPERATION_TIMEDOUT) {
      double connect = 0;
      curl_easy_getinfo(e, CURLINFO_CONNECT_TIME, &connect);
      res->timed_out = connect <= 0 && !r->got_first ? KL_HTTP_TIMEOUT_CONNECT : KL_HTTP_TIMEOUT_TOTAL;
    }
    res->too_big = r->too_big;
    if (code != CURLE_OK) {
      if (r->too_big) snprintf(res->error, sizeof res->error, "reply larger than %zu bytes", r->max_body);
      else snprintf(res->error, sizeof res->error, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(code));
      size_t el = strlen(res->error);
      while (el && res->error[el - 1] == '\n') res->error[--el] = 0;
    }
    if (!r->buf) r->buf = calloc(1, 1);
    res->body = r->buf;
    res->body_len = r->len;
    r->buf = NULL;
    req_free(r);
    return 1;
  }
  return 0;
}

/* Ends one transfer that passed its first-byte or idle limit (curl has neither: its
   low-speed limit would also end a model that thinks for minutes before answering);
   1 when one was found, res filled as a timed-out transfer (curl code 28). */
static int take_expired(kl_http *c, kl_http_result *res) {
  double now = kl_now();
  for (kl_http_req *r = c->reqs; r; r = r->next) {
    int kind = 0;
    double waited = 0;
    if (!r->got_first && r->first_byte_ms > 0 && (now - r->t_start) * 1000.0 >= r->first_byte_ms) {
      kind = KL_HTTP_TIMEOUT_FIRST_BYTE;
      waited = now - r->t_start;
    } else if (r->got_first && r->idle_ms > 0 && (now - r->t_last) * 1000.0 >= r->idle_ms) {
      kind = KL_HTTP_TIMEOUT_IDLE;
      waited = now - r->t_last;
    }
    if (!kind) continue;
    unlink_req(c, r, 0);
    curl_multi_remove_handle(c->multi, r->easy);
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    res->id = r->id;
    res->status = (int)status;
    res->curl_code = (int)CURLE_OPERATION_TIMEDOUT;
    res->total_s = now - r->t_start;
    res->timed_out = kind;
    snprintf(res->request_id, sizeof res->request_id, "%s", r->request_id);
    if (kind == KL_HTTP_TIMEOUT_FIRST_BYTE)
      snprintf(res->error, sizeof res->error, "no reply within %.3g s of sending (first-byte timeout)",
               waited);
    else
      snprintf(res->error, sizeof res->error,
               "the reply stalled: nothing for %.3g s after %zu bytes (idle timeout)", waited, r->len);
    res->body = r->buf ? r->buf : calloc(1, 1);
    res->body_len = r->buf ? r->len : 0;
    r->buf = NULL;
    req_free(r);
    return 1;
  }
  return 0;
}

int kl_http_poll(kl_http *c, int wait_ms, kl_http_result *res, int *done, kl_err *err) {
  *done = 0;
  if (!c || !res) return kl_fail(err, KL_EINVAL, 0, "kl_http_poll: bad arguments");
  memset(res, 0, sizeof *res);
  res->retry_after_ms = -1;
  if (take_finished(c, res)) {
    *done = 1;
    return KL_OK;
  }
  double deadline = kl_now() + (wait_ms > 0 ? wait_ms / 1000.0 : 0);
  for (;;) {
    CURLMcode mc = curl_multi_perform(c->multi, &c->running);
    if (mc != CURLM_OK)
      return kl_fail(err, KL_ESYS, (int)mc, "curl_multi_perform: %s", curl_multi_strerror(mc));
    if (take_finished(c, res) || take_expired(c, res)) {
      *done = 1;
      return KL_OK;
    }
    double left = deadline - kl_now();
    if (left <= 0) return KL_OK; /* with nothing pending this is a plain sleep */
    int ms = (int)(left * 1000.0) + 1;
    if (c->reqs && ms > KL_HTTP_TICK_MS) ms = KL_HTTP_TICK_MS;
    mc = curl_multi_poll(c->multi, NULL, 0, ms, NULL);
    if (mc != CURLM_OK) return kl_fail(err, KL_ESYS, (int)mc, "curl_multi_poll: %s", curl_multi_strerror(mc));
  }
}

int kl_http_cancel(kl_http *c, int64_t id) {
  if (!c) return KL_EINVAL;
  kl_http_req *r = unlink_req(c, NULL, id);
  if (!r) return KL_ENOTFOUND;
  curl_multi_remove_handle(c->multi, r->easy);
  req_free(r);
  return KL_OK;
}

int kl_http_pending(kl_http *c) {
  int n = 0;
  for (kl_http_req *r = c ? c->reqs : NULL; r; r = r->next) n++;
  return n;
}

void kl_http_result_free(kl_http_result *res) {
  if (!res) return;
  free(res->body);
  res->body = NULL;
  res->body_len = 0;
}
