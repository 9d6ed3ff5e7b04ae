A full disk never ends as success: the store refuses a write, the run stops with exit
1 and says what the store kept (a 256 KiB tmpfs in a private mount namespace, as root;
the test is skipped where that cannot be made).

  $ [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null || exit 80
  $ export KLOOP_CACHE=$PWD/cache
  $ cat > full.sh <<'SH'
  > mkdir -p small && mount -t tmpfs -o size=256k tmpfs small || exit 9
  > KLOOP_DB=$PWD/small/kloop.db "$KLOOP" strategies/tune.lua "$KLOOP_SRC/examples/cpu/sgemm_blocked.c" \
  >   --budget 200 --timing-budget 0.02 --seed 5 --method random > out.txt 2> err.txt
  > echo "exit $?"
  > cp small/kloop.db kept.db; for x in wal shm; do [ -f small/kloop.db-$x ] && cp small/kloop.db-$x kept.db-$x; done
  > umount small
  > SH
  $ cd "$KLOOP_SRC" && unshare -m sh "$OLDPWD/full.sh"; cd "$OLDPWD"
  exit 1
  $ mv "$KLOOP_SRC"/out.txt "$KLOOP_SRC"/err.txt "$KLOOP_SRC"/kept.db* . ; rmdir "$KLOOP_SRC/small"
  $ grep -c "run done" out.txt
  0
  [1]
  $ grep -o "the run stops: the store .* keeps [0-9]* candidates with [0-9]* evaluations of run 1" err.txt | sed 's|store .*kloop.db|store kloop.db|; s|[0-9][0-9]* candidates with [0-9][0-9]* evaluations|N candidates with N evaluations|'
  the run stops: the store kloop.db keeps N candidates with N evaluations of run 1

What the store kept is intact and readable, and it holds no more than it says:

  $ sqlite3 kept.db "PRAGMA integrity_check"
  ok
  $ n=$(grep -o "keeps [0-9]* candidates" err.txt | head -1 | grep -o "[0-9]*"); [ "$(sqlite3 kept.db 'SELECT count(*) FROM candidates')" = "$n" ] && echo same
  same
