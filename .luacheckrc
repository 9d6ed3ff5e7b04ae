-- .luacheckrc: luacheck settings for kloop's Lua (LuaJIT 2.1); run by tests/lint/luacheck.sh.
-- Kept: the bug classes (undefined and mutated globals, unused variables, values and
-- loop variables, shadowing, unreachable code). Left out: what is deliberate here.
std = "luajit"

-- Code lines up to 140 columns (the code wraps at about 100-120, messages run longer);
-- lines inside long strings (SQL, prompts, HTML) are text, not code.
max_code_line_length = 140
max_comment_line_length = 140
max_string_line_length = false

-- `self` is part of a method's interface even where one method does not use it.
self = false

ignore = {
  "212/_.*", -- an argument named _x is unused on purpose (an interface's position)
  "542", -- an empty `if` branch with a comment, kept to make an if/elseif chain explicit
  "581", -- `not (x > y)` is deliberate: it is true for NaN, `x <= y` is not
}

-- The library reaches the `kloop` module through require; only the CLI sets the global.
files["lua/kloop/cli/main.lua"] = { globals = { "kloop", "arg" } }
files["lua/kloop/cli/repl.lua"] = { globals = { "kloop" } }
-- `kloop mcp` keeps the real stdout for protocol messages and points io.stdout elsewhere.
files["lua/kloop/cli/mcp.lua"] = { globals = { io = { fields = { "stdout" } } } }

-- Strategies and scripts run with the `kloop` module as a global (docs/SCRIPTING.md).
files["strategies"] = { read_globals = { "kloop" } }
files["examples/strategies"] = { read_globals = { "kloop" } }

-- Task sidecars run in the sandbox of kloop.eval.task (sandbox_env): these names only.
stds.kloop_task = {
  read_globals = {
    "math", "string", "table", "tonumber", "tostring", "ipairs", "pairs", "type", "error",
    "assert", "select", "unpack", "pcall", "cdiv", "min", "max", "floor", "ceil",
    kloop = { fields = { "task" } },
  },
}
files["kernels"] = { std = "kloop_task" }
files["examples/cpu"] = { std = "kloop_task" }

-- Busted specs run inside the kloop binary (tests/busted.lua), which sets `kloop`.
-- A test double mirrors an interface, so its unused arguments are not findings.
-- Specs may swap io.stdout/io.stderr to capture what a command prints.
files["tests/spec"] = {
  std = "+busted", read_globals = { "kloop" }, globals = { io = { fields = { "stdout", "stderr" } } },
  unused_args = false,
}
