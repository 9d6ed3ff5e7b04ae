/* kl_db.c: SQLite behind the kl_db/kl_stmt contract of kloop.h (to be implemented). */
#include "kl_internal.h"
