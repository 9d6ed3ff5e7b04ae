kloop doctor: one line per component; exit 0 when the CPU paths work.

  $ kloop() { "$KLOOP" "$@"; }
  $ kloop doctor > out.txt; echo $?
  0
  $ grep -oE '^(ok|missing) +(GPU|NVRTC|CUPTI|C compiler|LLM|database)' out.txt | sed 's/^[a-z]* *//'
  GPU
  NVRTC
  CUPTI
  C compiler
  LLM
  database

NVRTC and CUPTI say what works, not what opens: a test kernel compiled (which needs
libnvrtc-builtins), the Profiler Host API initialised (which needs libnvperf_host):

  $ grep -cE '^ok +NVRTC +[0-9]+\.[0-9]+ \(/.*\): compiled a test kernel for sm_[0-9]+a?$|^missing +NVRTC' out.txt
  1
  $ grep -cE '^ok +CUPTI +/.*: Profiler Host API ok \([0-9]+ pass|^missing +CUPTI' out.txt
  1

An unwritable database folder is a missing CPU component: exit 1, with the fix.

  $ kloop doctor --db /proc/nonexistent/kloop.db | grep -A1 database
  missing  database    folder /proc/nonexistent is not writable
                       fix: pass --db PATH in a writable folder
  $ kloop doctor --db /proc/nonexistent/kloop.db > /dev/null; echo $?
  1

Without a key the LLM line says how to configure one, and never guesses:

  $ env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u KLOOP_LLM_URL -u OPENAI_BASE_URL $KLOOP doctor | grep -A1 '^missing  LLM'
  missing  LLM         no endpoint configured (the tune proposer still works)
                       fix: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or KLOOP_LLM_URL for a local server
  $ OPENAI_API_KEY=sk-test kloop doctor | grep '^ok       LLM'
  ok       LLM         OpenAI-compatible key set
