kloop promote: the staged path verified -> canary -> promoted on the host backend
(docs/PROMOTION.md). A store with a baseline and three candidates that all pass the
search's verification:

  $ kloop() { "$KLOOP" "$@"; }
  $ export KLOOP_CACHE=$PWD/cache KLOOP_DB=$PWD/p.db
  $ cd "$KLOOP_SRC" && kloop tests/promote/seed.lua "$KLOOP_DB"; cd "$OLDPWD"
  c:1 vadd.c ok
  c:2 vadd_fast.c ok
  c:3 vadd_unroll8.c ok
  c:4 vadd_overrun.c ok

Unrolled by 8 with no remainder: right on every declared size, refused at a hidden
size, which is named; the later steps are not reached:

  $ cd "$KLOOP_SRC" && kloop promote 3 | sed -E 's/N=[0-9]+/N=H/; s/\([0-9.]+ s\)/(T s)/; s/[0-9]+ hidden/K hidden/'; echo "exit ${PIPESTATUS[0]}"; cd "$OLDPWD"
  promotion 1 of c:3 (task vadd_promote) against c:1
    fresh_worker    passed   verified again on 3 sizes x 2 input sets with new inputs and guard patterns
    hidden_sizes    failed   N=H unwritten: * (glob)
    distributions   skipped  not reached
    property_check  skipped  not reached
    sanitizer       skipped  not reached
    ab_timing       skipped  not reached
  refused at hidden_sizes: N=H unwritten: * (glob)
  exit 1
  $ sqlite3 p.db "SELECT state FROM promotions WHERE candidate_id = 3; SELECT count(*), sum(status = 'skipped') FROM promotion_steps WHERE promotion_id = 1"
  refused
  6|4

A read of one element past the input passes verification (it lands in a guard zone);
AddressSanitizer refuses it:

  $ cd "$KLOOP_SRC" && kloop promote 4 | grep -E '^  sanitizer|^refused'; cd "$OLDPWD"
    sanitizer       failed   AddressSanitizer/UBSan at N=1000: AddressSanitizer: heap-buffer-overflow candidate.c:6 in vadd
  refused at sanitizer: AddressSanitizer/UBSan at N=1000: AddressSanitizer: heap-buffer-overflow candidate.c:6 in vadd (* s) (glob)

The right kernel is promoted against the run's baseline, with the ratio and its CI:

  $ cd "$KLOOP_SRC" && kloop promote 2 --json > "$OLDPWD/p2.json"; echo "exit $?"; cd "$OLDPWD"
  exit 0
  $ python3 -c "import json; p = json.load(open('p2.json')); print(p['state'], p['incumbent_id'], p['ratio_ci'][0] > 1, [s['status'] for s in p['steps']])"
  promoted 1 True ['passed', 'passed', 'passed', 'skipped', 'passed', 'passed']
  $ kloop show c:2 | grep '^promotion' | sed -E 's/[0-9]+\.[0-9]+/R/g'
  promotion  promoted Rx [R, R] vs c:1 (promotion 3)
  $ kloop show c:3 | grep '^promotion' | sed -E 's/N=[0-9]+/N=H/'
  promotion  refused at hidden_sizes: N=H unwritten (promotion 1)

The search's best by its median need not be the promoted one:

  $ kloop best | grep -E '^c:|promotion' | sed -E 's/N=[0-9]+/N=H/; s/  [0-9.]+ us  [0-9.]+x.*//'
  c:* (glob)
    promotion  * (glob)

export refuses the unpromoted, and --force says so in the files:

  $ kloop export 3 -o ex; echo "exit $?"
  kloop export: c:3 is not promoted (refused at hidden_sizes: N=* unwritten (promotion 1)): run `kloop promote 3` first, or give --force to export it anyway (the files then say so) (glob)
  exit 1
  $ kloop export 3 -o ex --force > /dev/null && grep -c 'exported WITHOUT promotion (--force)' ex/kernel.c ex/provenance.json
  ex/kernel.c:1
  ex/provenance.json:1
  $ kloop export 2 -o ex2 > /dev/null && grep -E '^// (promoted|  sanitizer)' ex2/kernel.c | sed -E 's/[0-9]+\.[0-9]+/R/g'
  // promoted Rx [R, R] vs c:1 (promotion 3)
  //   sanitizer passed: clean under AddressSanitizer and UBSan at N=1000
  $ python3 -c "import json; p = json.load(open('ex2/provenance.json'))['promotion']; print(p['state'], len(p['steps']), len(p['hidden_sizes']) > 5, p['sanitizer'][:6])"
  promoted 6 True passed

Bad usage:

  $ kloop promote 2>&1 | head -2; echo "exit ${PIPESTATUS[0]}"
  kloop promote: give one candidate id
  usage: kloop promote CANDIDATE [--against ID] [--allow-equal] [--db PATH] [--json]
  exit 2
  $ kloop promote r:1 2>&1 | head -1
  kloop promote: promote takes a candidate id, not a run
  $ kloop promote 99; echo "exit $?"
  kloop promote: no candidate 99
  exit 1
