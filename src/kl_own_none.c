/* kl_own_none.c: no shipped binaries of kloop's own kernels (the build's first stage,
   which runs tools/own_kernels.lua to make the real table: kl_own.h). */
#include "kl_own.h"

const kl_own_kernel kl_own_kernels[] = {{0, 0, 0, 0}};
