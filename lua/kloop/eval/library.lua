-- kloop.eval.library: a task's library reference (`library = {...}`): the time a vendor
-- library (cuBLAS for a gemm) takes for the same work, shown as a line in the report.
local M = {}

-- Checks the sidecar's `library` field: the normalized table, or raises a TaskError.
function M.check_field(file, v, task)
  local fields = require("kloop.eval.task_fields")
  fields.fail(file, "library", "library references are not supported yet", "remove the library field")
  return v, task
end

return M
