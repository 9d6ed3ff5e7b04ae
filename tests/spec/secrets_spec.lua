-- tests/spec/secrets_spec.lua: kloop.store.secrets, the one scrubber: remembered values,
-- key-shaped words, bearer tokens, credential-named fields; the caller's marker.
local secrets = require("kloop.store.secrets")
local cjson = require("cjson")

-- A secret no other spec uses (remember() is process-wide).
local KEY = "Zq7-remembered-XYZ"

describe("kloop.store.secrets", function()
  secrets.remember(KEY)

  it("replaces a remembered value anywhere, even inside a longer token, with the caller's marker", function()
    assert.are.equal("a [scrubbed] b", secrets.scrub_text("a " .. KEY .. " b"))
    assert.are.equal("x[scrubbed]y", secrets.scrub_text("x" .. KEY .. "y"))
    assert.are.equal("url?k=[redacted]&z=1", secrets.scrub_text("url?k=" .. KEY .. "&z=1", "[redacted]"))
    assert.are.equal("[scrubbed] and [scrubbed]", secrets.scrub_text(KEY .. " and " .. KEY))
  end)

  it("remembers values of 4 chars or more; a 3-char value is not hunted", function()
    secrets.remember("q9!")
    assert.are.equal("q9! stays", secrets.scrub_text("q9! stays"))
    secrets.remember("w8#r")
    assert.are.equal("[scrubbed] goes", secrets.scrub_text("w8#r goes"))
    secrets.remember(nil)
    secrets.remember(42)
  end)

  it("replaces a secret that contains another remembered one whole", function()
    secrets.remember("Lm3-short")
    secrets.remember("Lm3-short-and-longer")
    assert.are.equal("k=[scrubbed];", secrets.scrub_text("k=Lm3-short-and-longer;"))
  end)

  it("catches a remembered value in its JSON-escaped form", function()
    local slashed = "Pq5/with/slashes"
    secrets.remember(slashed)
    local body = cjson.encode({ error = "bad key " .. slashed })
    assert.is_truthy(body:find("\\/", 1, true)) -- (cjson escapes the slashes)
    local out = secrets.scrub_text(body)
    assert.is_nil(out:find("with", 1, true), out)
    assert.matches("[scrubbed]", out, 1, true)
  end)

  it("scrubs key-shaped words starting a word, and bearer tokens; a chosen marker for the shape", function()
    assert.are.equal("key [scrubbed] end", secrets.scrub_text("key sk-abcdefghijklmnop end"))
    assert.are.equal("bad key sk-[redacted] here",
      secrets.scrub_text("bad key sk-abcdefghijklmnop here", "[redacted]", "sk-[redacted]"))
    assert.are.equal("k=[scrubbed]", secrets.scrub_text("k=sk-proj-12345678"))
    assert.are.equal("sk-short stays", secrets.scrub_text("sk-short stays"))
    assert.are.equal("task-sk-1 stays", secrets.scrub_text("task-sk-1 stays"))
    assert.are.equal("mask-threshold_value", secrets.scrub_text("mask-threshold_value"))
    assert.are.equal("Authorization: Bearer [scrubbed]", secrets.scrub_text("Authorization: Bearer abc.def/ghi="))
  end)

  it("with shape_marker false replaces only known values (reply text where sk-... may be code)", function()
    assert.are.equal("int sk-abcdefghijklmnop; [x]", secrets.scrub_text("int sk-abcdefghijklmnop; " .. KEY, "[x]", false))
  end)

  it("leaves non-strings alone in scrub_text", function()
    assert.is_nil(secrets.scrub_text(nil))
    assert.are.equal(5, secrets.scrub_text(5))
  end)

  it("recognizes credential names but not token counts", function()
    for _, k in ipairs({ "api_key", "OPENAI_API_KEY", "apiKey", "apikey", "token", "access_token", "accessToken",
      "secret", "client_secret", "password", "DB_PASSWORD", "Authorization", "cookie" }) do
      assert.is_truthy(secrets.sensitive_name(k), k)
    end
    for _, k in ipairs({ "max_tokens", "tokens", "tokens_in", "model", "temperature", "beam", "seed", "monkey" }) do
      assert.is_falsy(secrets.sensitive_name(k), k)
    end
  end)

  it("deep-copies a table for JSON: credential fields, secret values and secret field names, at any depth", function()
    local v = { model = "m", api_key = "plain", max_tokens = 512, auth = true,
      nested = { deeper = { password = "hunter22", [KEY] = KEY, note = "uses " .. KEY, list = { "ok", KEY } },
        headers = { Authorization = { "x" } } } }
    local out = secrets.scrub(v)
    local text = cjson.encode(out)
    assert.is_nil(text:find(KEY, 1, true), text)
    assert.is_nil(text:find("hunter22", 1, true), text)
    assert.are.equal("m", out.model)
    assert.are.equal("[scrubbed]", out.api_key)
    assert.are.equal(512, out.max_tokens)
    assert.is_true(out.auth)
    assert.are.equal("[scrubbed]", out.nested.deeper.password)
    assert.are.equal("[scrubbed]", out.nested.deeper["[scrubbed]"])
    assert.are.equal("[scrubbed]", out.nested.deeper.note)
    assert.are.same({ "ok", "[scrubbed]" }, out.nested.deeper.list)
    assert.are.equal("[scrubbed]", out.nested.headers.Authorization)
    assert.are.equal("hunter22", v.nested.deeper.password) -- (a copy: the original is kept)
  end)

  it("makes numbers JSON-safe, drops functions and refuses cycles", function()
    local out = secrets.scrub({ a = 0 / 0, b = math.huge, f = print, c = { 1, print, 3 } })
    assert.are.equal(cjson.null, out.a)
    assert.are.equal(cjson.null, out.b)
    assert.is_nil(out.f)
    assert.are.same({ 1, cjson.null, 3 }, out.c)
    local loop = {}
    loop.self = loop
    assert.has_error(function() secrets.scrub(loop) end, "store: a table that contains itself cannot be stored as JSON")
  end)
end)
