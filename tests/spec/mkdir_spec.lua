-- tests/spec/mkdir_spec.lua: kloop.util.mkdir_p and kloop.core.sys.rm_rf (in C, no shell:
-- tests/cli/signals_children.t says why): nested folders, folders that exist, a file in
-- the way; a tree removed without following its symlinks.
local util = require("kloop.util")
local sys = require("kloop.core.sys")

describe("util.mkdir_p", function()
  local base = "/tmp/kloop-mkdir-spec-" .. sys.getpid()
  teardown(function() sys.rm_rf(base) end)

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

  it("removes a tree, not what its symlinks point to, and is true for a path that is gone", function()
    local keep = base .. "-keep"
    assert.is_true(util.mkdir_p(keep))
    assert(util.write_file(keep .. "/precious", "x"))
    assert.is_true(util.mkdir_p(base .. "/t/u"))
    assert(util.write_file(base .. "/t/u/f", "y"))
    assert(os.execute("ln -s " .. util.shell_quote(keep) .. " " .. util.shell_quote(base .. "/t/link")) == 0)
    assert.is_true(sys.rm_rf(base .. "/t"))
    assert.is_false(util.file_exists(base .. "/t/u/f"))
    assert.is_true(util.file_exists(keep .. "/precious"), "rm_rf followed a symlink")
    assert.is_true(sys.rm_rf(base .. "/t"))
    assert.is_false(sys.rm_rf("/"))
    assert.is_false(sys.rm_rf(""))
    assert.is_true(sys.rm_rf(keep))
  end)
end)
