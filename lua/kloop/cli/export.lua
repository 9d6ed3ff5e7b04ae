-- kloop.cli.export: `kloop export ID -o DIR`: a candidate's kernel, launch plan header and provenance (kloop.store_cmd does the work).
return require("kloop.cli.store_cmd").command("export")
