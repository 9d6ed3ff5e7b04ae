-- kloop.cli.runs: `kloop runs`: one line per run in the store (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("runs")
