A disk that fills while kloop's compile cache writes a binary is kloop's failure, said
plainly with the fix, never a verdict on the kernel, and nothing half-written stays
behind (a 64 KiB tmpfs left with 4 KiB free, as root in a private mount namespace; the
test is skipped where that cannot be made). The folder that cannot be made is in
compile.t.

  $ [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null || exit 80
  $ cat > full.sh <<'SH'
  > mkdir -p small && mount -t tmpfs -o size=64k tmpfs small || exit 9
  > mkdir -p small/cache/cubin
  > dd if=/dev/zero of=small/fill bs=4k count=15 2>/dev/null
  > KLOOP_CACHE=$PWD/small/cache "$KLOOP" compile "$KLOOP_SRC/kernels/gemm_tiled.lua" 2>&1; echo "exit $?"
  > ls -A small/cache/cubin | wc -l
  > umount small
  > SH
  $ unshare -m sh full.sh
  kloop compile: kloop's compile cache */small/cache/cubin cannot keep the binary (No space left on device): free space there, or set KLOOP_CACHE to a writable folder (glob)
  exit 1
  0
