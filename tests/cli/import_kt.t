kloop import-kt turns a Kernel Tuner T1 input file into a kloop sidecar next to the
kernel; `kloop compile` then builds it (no GPU needed), and `kloop tune --space`
counts its space without evaluating anything.

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache
  $ cp "$KLOOP_SRC"/tests/import_kt/* .
  $ T() { sed 's/ [0-9.]* s)/ T s)/; s/ [0-9.]* s, cached)/ T s)/'; }

A 1-D kernel: a grid divided by a block size and a tile, a restriction, a plain
`float *` input (ReadOnly becomes input = true, the kernel is not edited):

  $ kloop import-kt vadd.json
  wrote ./vadd.lua (task vadd, kernel ./vadd.cu)
  $ cat vadd.lua
  -- vadd.cu: imported from vadd.json by kloop import-kt (Kernel Tuner T1); docs/TASKS.md
  return kloop.task {
    name = "vadd", entry = "vadd",
    kernel = "vadd.cu",
    args = {
      { "c", "float*", size = "NX", output = true },
      { "a", "float*", size = "NX", input = true, init = "uniform(0,1)" },
      { "b", "const float*", size = "NX", init = "const(2)" },
      { "n", "int", value = "NX" },
    },
    sizes = {
      bench = { NX = 1048576 },
      check = { { NX = 1000 }, { NX = 3 } },
    },
    params = {
      block_size_x = { 128, 64, 256, 512, 1024 },
      tile = { 1, 2, 4 },
    },
    constraint = function(p) return (p.block_size_x * p.tile <= 1024 and p.tile ~= 4) end,
    launch = function(s) return { grid = { cdiv(s.NX, s.block_size_x * s.tile) }, block = { s.block_size_x, 1, 1 } } end,
    -- bytes: every buffer once; flops: not in a T1 file, fill it in for a compute-bound kernel
    cost = function(s) return { flops = 0, bytes = 4 * (s.NX) + 4 * (s.NX) + 4 * (s.NX) } end,
    options = { "--use_fast_math" },
  }
  $ kloop compile vadd.cu | T
  vadd.cu: ok (sm_90, T s)
    vadd: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)
  $ kloop tune vadd.cu --space
  vadd (vadd.lua): 2 parameters
    block_size_x = {128, 64, 256, 512, 1024}
    tile = {1, 2, 4}
  space: 15 raw, 9 valid (after the constraint)
  $ kloop space vadd.cu --json | python3 -c "import json, sys; r = json.load(sys.stdin); print(r['raw'], r['valid'], r['constraint'], [p['name'] for p in r['params']])"
  15 9 True ['block_size_x', 'tile']

A 2-D grid with a fixed block height (Kernel Tuner defines block_size_y; kloop passes
it as an option), the scalars following the problem size:

  $ kloop import-kt stencil.json -o stencil.lua
  wrote stencil.lua (task blur, kernel ./stencil.cu)
  $ grep -E 'launch|options|"w"|"h"' stencil.lua
      { "w", "int", value = "NX" },
      { "h", "int", value = "NY" },
    launch = function(s) return { grid = { cdiv(s.NX, s.block_size_x), cdiv(s.NY, 8) }, block = { s.block_size_x, 8, 1 } } end,
    options = { "-Dblock_size_y=8" },
  $ kloop compile stencil.cu --params block_size_x=64 --json | python3 -c "import json, sys; r = json.load(sys.stdin); print(r['verdict'], r['launch']['cases'][-1]['kernels'][0]['grid'])"
  ok [64, 256, 1]

A kernel with C++ linkage (no extern "C") is found through its lowered name:

  $ kloop import-kt scale_cpp.json
  wrote ./scale_cpp.lua (task scale_cpp, kernel ./scale_cpp.cu)
  $ kloop compile scale_cpp.cu | T
  scale_cpp.cu: ok (sm_90, T s)
    scale_cpp -> _Z9scale_cppPfPKffi
    _Z9scale_cppPfPKffi: * registers, 0 B static smem, 0 B stack, spills 0 B stores / 0 B loads (glob)

What cannot be mapped is refused with the file, the field and the fix, and nothing is
written:

  $ kloop import-kt cmem.json
  kloop import-kt: cmem.json: KernelSpecification.Arguments[2].MemoryType: 'Symbol' (constant or shared memory arguments, Kernel Tuner's cmem_args) is not imported (fix: declare it in the sidecar's symbols = {...} (docs/TASKS.md, "Symbols filled from the host") and drop it from Arguments)
  [1]
  $ kloop import-kt vadd.json
  kloop import-kt: ./vadd.lua exists (fix: -o another path, or --force)
  [1]
  $ sed 's/"\[1, 2, 4\]"/"range(1, 5)"/' vadd.json > range.json
  $ kloop import-kt range.json --force
  kloop import-kt: range.json: ConfigurationSpace.TuningParameters[2].Values: cannot read the value list "range(1, 5)" (only a literal list is mapped) (fix: list the values: "Values": "[32, 64, 128]")
  [1]
  $ sed 's/tile != 4/tile != len(x)/' vadd.json > cond.json
  $ kloop import-kt cond.json --force
  kloop import-kt: cond.json: ConfigurationSpace.Conditions[1].Expression: 'len' in "block_size_x * tile <= 1024 and tile != len(x)" is not a tunable parameter (fix: write the restriction over the TuningParameters only)
  [1]
  $ kloop import-kt vadd.json -o /tmp/elsewhere.lua
  kloop import-kt: vadd.json: -o /tmp/elsewhere.lua is not next to the kernel ./vadd.cu (fix: write the sidecar into .)
  [1]
