-- kloop.cli.replay: `kloop replay ID`: re-evaluate a stored candidate and compare (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("replay")
