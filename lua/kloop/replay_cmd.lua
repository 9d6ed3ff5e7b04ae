-- kloop.replay_cmd: `kloop replay ID`: re-evaluate a stored candidate and compare (kloop.store_cmd does the work).
return require("kloop.store_cmd").command("replay")
