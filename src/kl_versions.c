/* kl_versions.c: version strings of kloop and the libraries it links. */
#include <curl/curl.h>
#include <sqlite3.h>
#include "kl_internal.h"

const char *kl_version(void) { return KLOOP_VERSION; }
const char *kl_curl_version(void) { return curl_version_info(CURLVERSION_NOW)->version; }
const char *kl_sqlite_version(void) { return sqlite3_libversion(); }
const char *kl_cuda_home(void) {
  /* Run-time override first: the toolkit may live elsewhere on the machine that runs us. */
  extern char *getenv(const char *);
  const char *h = getenv("KLOOP_CUDA_HOME");
  if (h && *h) return h;
  h = getenv("CUDA_HOME");
  if (h && *h) return h;
  return KLOOP_CUDA_HOME;
}
