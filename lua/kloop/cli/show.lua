-- kloop.cli.show: `kloop show ID`: a run, or a candidate with its lineage and evaluation (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("show")
