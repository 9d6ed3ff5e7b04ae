-- tests/spec/args_spec.lua: kloop.cli.args, the option parser of the commands: kinds of
-- value, unknown options, "--", inline values, and the help / bad-usage front.
local args = require("kloop.cli.args")

local SPEC = { ["--json"] = "flag", ["--db"] = "value", ["--budget"] = "number", ["-U"] = "uint",
  ["--no-cache"] = "flag", ["-o"] = "value" }

local function parse(...) return args.parse({ ... }, SPEC) end

describe("kloop.cli.args", function()
  it("reads flags, values and positionals in any order", function()
    local opts, pos = parse("a", "--json", "--db", "x.db", "b", "--no-cache", "-o", "out")
    assert.are.same({ json = true, db = "x.db", no_cache = true, o = "out" }, opts)
    assert.are.same({ "a", "b" }, pos)
    assert.are.same({ {}, { "-" } }, { parse("-") }) -- "-" alone is a positional (stdin)
  end)

  it("refuses an unknown option", function()
    assert.are.same({ nil, "unknown option --bogus" }, { parse("--bogus") })
    assert.are.same({ nil, "unknown option -x" }, { parse("a", "-x") })
    assert.are.same({ nil, "unknown option --bogus=1" }, { parse("--bogus=1") })
  end)

  it("refuses a value option at the end without its value", function()
    assert.are.same({ nil, "--db needs a value" }, { parse("--db") })
    assert.are.same({ nil, "--budget needs a value" }, { parse("a", "--budget") })
  end)

  it("takes --name=value inline, also empty or holding '='", function()
    assert.are.same({ db = "x.db" }, (parse("--db=x.db")))
    assert.are.same({ db = "" }, (parse("--db=")))
    assert.are.same({ db = "a=b" }, (parse("--db=a=b")))
    assert.are.same({ budget = 2.5 }, (parse("--budget=2.5")))
  end)

  it("refuses a value given to a flag (it used to be dropped: --json=no meant --json)", function()
    assert.are.same({ nil, "--json takes no value" }, { parse("--json=no") })
  end)

  it("treats everything after -- as positional", function()
    local opts, pos = parse("--json", "--", "--db", "-x", "--")
    assert.are.same({ json = true }, opts)
    assert.are.same({ "--db", "-x", "--" }, pos)
  end)

  it("refuses a number that is not a number, nan and inf included", function()
    assert.are.same({ nil, "--budget needs a number, got 'abc'" }, { parse("--budget", "abc") })
    assert.are.same({ nil, "--budget needs a number, got '2s'" }, { parse("--budget=2s") })
    assert.are.same({ nil, "--budget needs a number, got 'nan'" }, { parse("--budget", "nan") })
    assert.are.same({ nil, "--budget needs a number, got 'inf'" }, { parse("--budget", "inf") })
    assert.are.same({ nil, "--budget needs a number, got '1e999'" }, { parse("--budget", "1e999") })
    assert.are.same({ budget = 16 }, (parse("--budget", "0x10")))
  end)

  it("takes a negative number as a value, not as an option", function()
    assert.are.same({ { budget = -5 }, { "a" } }, { parse("--budget", "-5", "a") })
    assert.are.same({ db = "-x" }, (parse("--db", "-x")))
  end)

  it("takes only whole numbers >= 0 for a uint (kloop diff -U -1 used to hang)", function()
    assert.are.same({ U = 0 }, (parse("-U", "0")))
    assert.are.same({ U = 12 }, (parse("-U", "12")))
    for _, bad in ipairs({ "-1", "1.5", "nan", "x" }) do
      assert.are.same({ nil, "-U needs a whole number >= 0, got '" .. bad .. "'" }, { parse("-U", bad) })
    end
  end)

  it("raises on a spec with an unknown kind (a programming error)", function()
    assert.has_error(function() args.parse({ "--x", "1" }, { ["--x"] = "integer" }) end)
  end)

  it("reads K=V lists for --params", function()
    assert.are.same({ BM = "64", BN = "32" }, args.defines("BM=64, BN = 32"))
    assert.are.same({}, args.defines(nil))
    assert.is_nil((args.defines("BM")))
  end)

  describe("command", function()
    local function capture(fn)
      local out, err = {}, {}
      local stdout, stderr = io.stdout, io.stderr
      local function sink(t) return { write = function(self, ...) for _, s in ipairs({ ... }) do t[#t + 1] = s end return self end } end
      io.stdout, io.stderr = sink(out), sink(err)
      local ok, a, b = pcall(fn)
      io.stdout, io.stderr = stdout, stderr
      assert(ok, a)
      return a, b, table.concat(out), table.concat(err)
    end
    local usage = "usage: kloop x [--json]\n"

    it("prints help on stdout, exit 0", function()
      for _, h in ipairs({ "-h", "--help" }) do
        local opts, code, out, err = capture(function() return args.command("x", { h }, { ["--json"] = "flag" }, usage) end)
        assert.are.same({ nil, 0, usage, "" }, { opts, code, out, err })
      end
    end)

    it("says what is wrong and the usage on stderr, exit 2", function()
      local opts, code, out, err = capture(function() return args.command("x", { "--y" }, { ["--json"] = "flag" }, usage) end)
      assert.are.same({ nil, 2, "", "kloop x: unknown option --y\n" .. usage }, { opts, code, out, err })
    end)

    it("returns options and positionals otherwise", function()
      local opts, pos = capture(function() return args.command("x", { "--json", "t" }, { ["--json"] = "flag" }, usage) end)
      assert.are.same({ { json = true }, { "t" } }, { opts, pos })
    end)
  end)
end)
