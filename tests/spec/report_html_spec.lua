-- tests/spec/report_html_spec.lua: the report page and the audit text: escaping, no script or URL, atomic writes.
local store = require("kloop.store.db")
local build = require("kloop.report.build")
local html = require("kloop.report.html")
local terminal = require("kloop.report.terminal")
local fmt = require("kloop.report.format")
local util = require("kloop.util")

local root = debug.getinfo(1, "S").source:sub(2):match("^(.*)/tests/spec/") or "."
local make_store = dofile(root .. "/tests/report/fixture.lua")

describe("kloop.report", function()
  local path, ids, page, d
  setup(function()
    path, ids = make_store()
    d = assert(build.gather(path, { ids.run_a, ids.run_b }))
    page = html.render(d)
  end)
  teardown(function()
    for _, s in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. s) end
  end)

  it("escapes stored text: a reason cannot close a cell or start a script, a name cannot end CDATA", function()
    assert.is_nil(page:find("<script", 1, true))
    assert.is_nil(page:find("]]>", 1, true))
    assert.truthy(page:find("&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;", 1, true))
    assert.truthy(page:find('class="bl">run %d+  evil%]%]&gt;&lt;script&gt;x&lt;/script&gt;  optimize@v2</text>'))
    assert.are.equal("]]&gt; &lt;b&gt;x&lt;/b&gt; &amp; &quot;q&quot; &#39;", fmt.escape("]]> <b>x</b> & \"q\" '"))
    assert.are.equal("ab", fmt.escape("a\0\1b"))
  end)

  it("names no external resource: no src, href, url() or import, and a policy that forbids loads", function()
    assert.is_nil(page:find("src=", 1, true))
    assert.is_nil(page:find("href=", 1, true))
    assert.is_nil(page:find("url(", 1, true))
    assert.is_nil(page:find("@import", 1, true))
    assert.is_nil(page:find("https?://"))
    assert.truthy(page:find("default-src 'none'", 1, true))
  end)

  it("has every section, with the stored numbers in its cells", function()
    for _, id in ipairs({ "summary", "progress", "models", "failures", "lineage", "top", "provenance", "drift" }) do
      assert.truthy(page:find('<section id="' .. id .. '">', 1, true), id)
    end
    assert.truthy(page:find("DRIFT: prompt versions differ", 1, true))
    local db = assert(store.open(path, { create = false, readonly = true }))
    local tin = db:query([[SELECT sum(l.tokens_in) AS n FROM llm_calls l JOIN candidates c ON c.id = l.candidate_id
      WHERE c.run_id = ? AND c.model = 'm-a' AND c.prompt_hash = 'v1']], ids.run_a)[1].n
    db:close()
    assert.truthy(page:find(string.format('<tr data-run="%d" data-model="m-a" data-prompt="optimize@v1">', ids.run_a), 1, true))
    assert.truthy(page:find(string.format('data-k="tokens_in" data-v="%d">%d<', tin, tin), 1, true))
    -- a fact the store lacks reads n/a with the reason, never 0
    assert.truthy(page:find("n/a (host run: no measured GPU ceiling)", 1, true))
  end)

  it("writes the page atomically and says why it cannot", function()
    local out = os.tmpname()
    assert.is_true(build.write(path, { ids.run_a }, out))
    local text = assert(util.read_file(out))
    assert.truthy(text:find("kloop process audit: run " .. ids.run_a, 1, true))
    assert.is_false(util.file_exists(out .. ".tmp." .. tonumber(require("kloop.core.sys").getpid())))
    os.remove(out)
    local ok, err = build.write(path, { ids.run_a }, "/nonexistent-dir/r.html")
    assert.is_nil(ok)
    assert.matches("cannot write /nonexistent%-dir/r.html", err)
    ok, err = build.write(path, { 4242 }, out)
    assert.is_nil(ok)
    assert.are.equal("no run 4242 in the store", err)
    ok, err = build.write("/nonexistent-dir/kloop.db", {}, out)
    assert.is_nil(ok)
    assert.is_string(err)
    assert.is_false(util.file_exists(out))
  end)

  it("prints the same tables as aligned text, coloured only when asked", function()
    local plain = terminal.render(d, { color = false })
    assert.is_nil(plain:find("\27", 1, true))
    assert.truthy(plain:find("DRIFT: prompt versions differ", 1, true))
    assert.truthy(plain:find("</td><script>", 1, true)) -- the terminal prints stored text as it is
    local colored = terminal.render(d, { color = true })
    assert.truthy(colored:find("\27[1m", 1, true))
    -- columns line up: every row of the models table starts its PROMPT column at one offset
    local header = plain:match("\n(RUN +MODEL +PROMPT[^\n]*)")
    local at = header:find("PROMPT", 1, true)
    for line in plain:match("models and prompt versions\n(.-)\n\n"):gmatch("[^\n]+") do
      assert.are.equal(" ", line:sub(at - 1, at - 1), line)
    end
  end)
end)
