-- kloop.cli.diff: `kloop diff A B`: source diff between two candidates (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("diff")
