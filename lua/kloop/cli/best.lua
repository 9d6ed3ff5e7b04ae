-- kloop.cli.best: `kloop best [RUN]`: the best verified candidate (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("best")
