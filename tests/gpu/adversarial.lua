-- tests/gpu/adversarial.lua: the adversarial suite on the GPU (label gpu).
local core = require("kloop.core.api")
if not core.gpu_probe(0) then print("SKIP: no GPU here") os.exit(77) end
arg = { [0] = "tests/adversarial/run.lua" }
dofile("tests/adversarial/run.lua")
