-- kloop.export_cmd: `kloop export ID -o DIR`: a candidate's kernel, launch plan header and provenance (kloop.store_cmd does the work).
return require("kloop.store_cmd").command("export")
