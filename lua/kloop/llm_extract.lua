-- kloop.llm_extract: finds the kernel (and its `// kloop: launch` plan lines) in an LLM reply.
--
-- Rules (docs/LLM.md, "Extraction"):
--   * CRLF and lone CR become LF first.
--   * Fenced blocks: a line of 3+ backticks or tildes (up to 3 spaces of indent), an
--     optional language; closed by a line of the same character, at least as long.
--     A fence left open runs to the end of the reply (`unterminated = true`).
--   * Code blocks are those tagged cuda/cu/cpp/c++/c/cc/cxx/h/hpp/cuh or untagged;
--     blocks in other languages (python, bash, json...) count only when nothing else is there.
--   * With an entry name: the LAST code block that defines it (revisions come last);
--     none defines it -> failure. Without: the longest code block.
--   * No fence at all: a reply that is plainly code (has __global__ or the entry) is
--     taken from its first code-looking line.
-- Failures return nil, reason: never an error, whatever the reply holds.
local M = {}

local CODE_LANGS = {
  [""] = true, cuda = true, cu = true, cuh = true, cpp = true, ["c++"] = true, c = true, cc = true,
  cxx = true, h = true, hpp = true, hip = true, ptx = false,
}

local function normalize(text)
  return (text:gsub("\r\n", "\n"):gsub("\r", "\n"))
end

-- Fenced blocks in order: {lang, body, unterminated, index}.
function M.blocks(text)
  text = normalize(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
  local out = {}
  local i = 1
  while i <= #lines do
    local indent, fence, info = lines[i]:match("^( ? ? ?)(```+)(.*)$")
    if not fence then indent, fence, info = lines[i]:match("^( ? ? ?)(~~~+)(.*)$") end
    if fence and not (fence:sub(1, 1) == "`" and info:find("`", 1, true)) then
      local lang = (info:match("^%s*([%w_+%-%.#]*)") or ""):lower()
      local ch, len = fence:sub(1, 1), #fence
      local body = {}
      local j = i + 1
      local closed = false
      while j <= #lines do
        local f2 = lines[j]:match("^ ? ? ?(" .. (ch == "`" and "```+" or "~~~+") .. ")%s*$")
        if f2 and #f2 >= len then closed = true break end
        -- strip the opening fence's indentation from the body lines
        local l = lines[j]
        if #indent > 0 and l:sub(1, #indent) == indent then l = l:sub(#indent + 1) end
        body[#body + 1] = l
        j = j + 1
      end
      out[#out + 1] = { lang = lang, body = table.concat(body, "\n"), unterminated = not closed, index = #out + 1 }
      i = j + 1
    else
      i = i + 1
    end
  end
  return out
end

-- True when src defines `entry` as a function (a __global__ kernel or a C function).
function M.defines(src, entry)
  local clean = src:gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
  local name = entry:gsub("%p", "%%%0")
  for pre, rest in clean:gmatch("([^;{}]-)%f[%w_]" .. name .. "%s*(%b())%s*{") do
    if pre:find("__global__", 1, true) or pre:find("void", 1, true) then return true end
  end
  return false
end

-- The `// kloop: launch ...` lines of a source, in order.
function M.launch_lines(src)
  local out = {}
  for line in (src .. "\n"):gmatch("([^\n]*)\n") do
    local body = line:match("^%s*//%s*kloop:%s*launch%s+(.-)%s*$")
    if body then out[#out + 1] = body end
  end
  return out
end

local function looks_like_code_start(line)
  return line:match("^%s*#") or line:match("^%s*extern%s") or line:match("^%s*__global__")
    or line:match("^%s*template%s*<") or line:match("^%s*//") or line:match("^%s*typedef%s")
    or line:match("^%s*struct%s") or line:match("^%s*static%s") or line:match("^%s*__device__")
    or line:match("^%s*constexpr%s") or line:match("^%s*namespace%s") or line:match("^%s*using%s")
    or line:match("^%s*void%s")
end

-- Extracts the kernel from a reply. opts.entry: the task's entry function.
-- Returns {source, lang, plans, block, nblocks, unterminated} or nil, reason.
function M.extract(text, opts)
  opts = opts or {}
  if type(text) ~= "string" or text:match("^%s*$") then return nil, "the reply is empty" end
  text = normalize(text)
  local entry = opts.entry
  local blocks = M.blocks(text)
  local code, other = {}, {}
  for _, b in ipairs(blocks) do
    if not b.body:match("^%s*$") then
      if CODE_LANGS[b.lang] then code[#code + 1] = b else other[#other + 1] = b end
    end
  end
  if #code == 0 then code = other end
  local chosen
  if #code > 0 then
    if entry then
      for _, b in ipairs(code) do
        if M.defines(b.body, entry) then chosen = b end
      end
      if not chosen then
        return nil, string.format("no code block in the reply defines %s (%d block%s found)", entry,
          #code, #code == 1 and "" or "s")
      end
    else
      for _, b in ipairs(code) do
        if not chosen or #b.body > #chosen.body then chosen = b end
      end
    end
  else
    -- no fences: accept a reply that is plainly code
    local is_code = text:find("__global__", 1, true) or (entry and M.defines(text, entry))
    if not is_code then return nil, "no code block in the reply" end
    local lines, start = {}, nil
    for line in (text .. "\n"):gmatch("([^\n]*)\n") do
      lines[#lines + 1] = line
      if not start and looks_like_code_start(line) then start = #lines end
    end
    if not start then return nil, "no code block in the reply" end
    local body = table.concat(lines, "\n", start)
    if entry and not M.defines(body, entry) then return nil, "the reply's code does not define " .. entry end
    chosen = { lang = "", body = body, unterminated = false, index = 0 }
  end
  local src = chosen.body:gsub("^%s*\n", ""):gsub("%s+$", "") .. "\n"
  return {
    source = src,
    lang = chosen.lang,
    plans = M.launch_lines(src),
    block = chosen.index,
    nblocks = #blocks,
    unterminated = chosen.unterminated,
  }
end

return M
