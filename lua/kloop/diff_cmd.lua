-- kloop.diff_cmd: `kloop diff A B`: source diff between two candidates (kloop.store_cmd does the work).
return require("kloop.store_cmd").command("diff")
