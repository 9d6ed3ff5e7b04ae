/* kl_check.h: the CHECK macro the C unit tests share: a failed check prints its file,
   line, condition and message, counts in `failures`, and the test goes on. */
#ifndef KL_CHECK_H
#define KL_CHECK_H
#include <stdio.h>

static int failures = 0;
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      failures++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)

#endif
