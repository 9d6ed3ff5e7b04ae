-- kloop.runs_cmd: `kloop runs`: one line per run in the store (kloop.store_cmd does the work).
return require("kloop.store_cmd").command("runs")
