-- kloop.best_cmd: `kloop best [RUN]`: the best verified candidate (kloop.store_cmd does the work).
return require("kloop.store_cmd").command("best")
