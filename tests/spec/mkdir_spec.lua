-- tests/spec/mkdir_spec.lua: kloop.util.mkdir_p (in C, no shell: tests/cli/signals_children.t
-- says why): nested folders, folders that exist, and a file in the way.
local util = require("kloop.util")
local sys = require("kloop.core.sys")

describe("util.mkdir_p", function()
  local base = "/tmp/kloop-mkdir-spec-" .. sys.getpid()
  teardown(function() os.execute("rm -rf " .. util.shell_quote(base)) end)

  it("makes every missing folder of a path, and is true when they exist", function()
    assert.is_true(util.mkdir_p(base .. "/a/b/c"))
    assert.is_true(sys.dir_writable(base .. "/a/b/c"))
    assert.is_true(util.mkdir_p(base .. "/a/b/c"))
    assert.is_true(util.mkdir_p(base .. "/a/b/c/"))
    assert.is_true(util.mkdir_p(base .. "/a/./d"))
  end)

  it("is false where a file is in the way, or the path is empty", function()
    assert.is_true(util.mkdir_p(base))
    assert(util.write_file(base .. "/file", "x"))
    assert.is_false(util.mkdir_p(base .. "/file"))
    assert.is_false(util.mkdir_p(base .. "/file/sub"))
    assert.is_false(util.mkdir_p(""))
  end)
end)
