Inout buffers with a separate reference (issue 16): the stencil writes only the interior
of `out`; the halo keeps the initial values it was given, the float64 reference starts
from the same values, and every element is compared.

  $ export KLOOP_CACHE=$PWD/cache
  $ "$KLOOP" check "$KLOOP_SRC/examples/cpu/stencil.c" --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['verdict'])"
  ok

A candidate that clears the halo is wrong, and the evidence names the buffer:

  $ "$KLOOP" check "$KLOOP_SRC/examples/cpu/stencil.c" --candidate "$KLOOP_SRC/tests/strategies/stencil_bad_halo.c" --json | python3 -c "import json,sys; r=json.load(sys.stdin); print(r['verdict'], r['evidence']['arg'])"
  wrong out
