-- kloop.report.svg: the report's charts as inline SVG text: line charts on log axes and 100% stacked bars.
-- Pure string building (no JavaScript, no external reference); every text passes
-- format.escape, so a model name or reason cannot close the markup.
local fmt = require("kloop.report.format")

local M = {}

local esc = fmt.escape

-- A colour per series and per verdict; fixed, so two reports of the same store match.
M.PALETTE = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2" }
M.VERDICT_COLORS = {
  ok = "#2ca02c", wrong = "#d62728", compile_error = "#ff7f0e", nan = "#e377c2", unwritten = "#8c564b",
  crashed = "#7f0000", timeout = "#9467bd", out_of_bounds = "#bcbd22", inputs_modified = "#17becf",
  nondeterministic = "#7f7f7f", rejected = "#393b79", launch_error = "#ad494a", ["(not evaluated)"] = "#cccccc",
}

-- An unknown verdict gets a palette colour picked by its name, the same in every row.
function M.verdict_color(v)
  if M.VERDICT_COLORS[v] then return M.VERDICT_COLORS[v] end
  local h = 0
  for i = 1, #v do h = (h * 31 + v:byte(i)) % 9973 end
  return M.PALETTE[h % #M.PALETTE + 1]
end

local function num(v) return string.format("%.2f", v) end

-- Tick values of a log axis over [lo, hi]: the decades, with 2 and 5 between them
-- when the range is short.
local function log_ticks(lo, hi)
  local out = {}
  local a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
  local mult = (b - a) <= 2 and { 1, 2, 5 } or { 1 }
  for e = a, b do
    for _, m in ipairs(mult) do
      local v = m * 10 ^ e
      if v >= lo * 0.999 and v <= hi * 1.001 then out[#out + 1] = v end
    end
  end
  return out
end

local function lin_ticks(lo, hi)
  local span = hi - lo
  local step = 10 ^ math.floor(math.log10(span / 4))
  if span / step > 10 then step = step * 2 end
  if span / step > 10 then step = step * 2.5 end
  local out = {}
  local v = math.ceil(lo / step) * step
  while v <= hi + step * 1e-9 do out[#out + 1] = v v = v + step end
  return out
end

-- A log axis spanning less than one 1-2-5 step gets round linear ticks instead.
local function axis_ticks(lo, hi, log)
  local t = log and log_ticks(lo, hi) or {}
  if #t < 2 then t = lin_ticks(lo, hi) end
  return t
end

local function tick_text(v)
  local a = math.abs(v)
  if a ~= 0 and (a >= 1e5 or a < 1e-3) then return string.format("%.0e", v):gsub("e%+?0*(%d)", "e%1") end
  return (string.format("%.4g", v))
end

-- An axis scale: data value -> pixel, on a log or a linear axis, padded so the
-- extremes sit inside the frame.
local function scale(lo, hi, log, p0, p1)
  if log then
    if lo == hi then lo, hi = lo / 2, hi * 2 end
    local l0, l1 = math.log10(lo), math.log10(hi)
    local pad = (l1 - l0) * 0.05
    l0, l1 = l0 - pad, l1 + pad
    return function(v) return p0 + (math.log10(v) - l0) / (l1 - l0) * (p1 - p0) end, 10 ^ l0, 10 ^ l1
  end
  if lo == hi then lo, hi = lo - 1, hi + 1 end
  local pad = (hi - lo) * 0.05
  lo, hi = lo - pad, hi + pad
  return function(v) return p0 + (v - lo) / (hi - lo) * (p1 - p0) end, lo, hi
end

-- opts: title, xlabel, ylabel, xlog, ylog, width, height, series = { {name, points =
-- {{x, y}...}, step = true} }, hlines = { {y, label, dash} }, missing = { "text", ... }
-- (facts that cannot be drawn, said under the chart). Points a log axis cannot show
-- (x or y <= 0) are left out and counted in the note.
function M.line_chart(opts)
  local W, H = opts.width or 620, opts.height or 300
  local L, R, T, B = 70, 150, 28, 44
  local xs, ys, dropped = {}, {}, 0
  local series = {}
  for i, s in ipairs(opts.series or {}) do
    local pts = {}
    for _, p in ipairs(s.points or {}) do
      local x, y = p[1], p[2]
      if type(x) == "number" and type(y) == "number" and (not opts.xlog or x > 0) and (not opts.ylog or y > 0) then
        pts[#pts + 1] = { x, y }
        xs[#xs + 1], ys[#ys + 1] = x, y
      elseif type(y) == "number" then
        dropped = dropped + 1
      end
    end
    series[#series + 1] = { name = s.name, points = pts, step = s.step, color = M.PALETTE[(i - 1) % #M.PALETTE + 1] }
  end
  local hl = {}
  for _, h in ipairs(opts.hlines or {}) do
    if type(h.y) == "number" and (not opts.ylog or h.y > 0) then hl[#hl + 1] = h ys[#ys + 1] = h.y end
  end
  local out = { string.format('<svg class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img">',
    W, H, W, H) }
  out[#out + 1] = string.format('<title>%s</title>', esc(opts.title))
  out[#out + 1] = string.format('<text x="%d" y="16" class="ct">%s</text>', L, esc(opts.title))
  out[#out + 1] = string.format('<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>', L, T, W - L - R, H - T - B)
  if #xs == 0 then
    out[#out + 1] = string.format('<text x="%d" y="%d" class="na">n/a (%s)</text>', L + 10, T + 30,
      esc(opts.empty or "no point to plot"))
    out[#out + 1] = "</svg>"
    return table.concat(out, "\n")
  end
  local xmin, xmax, ymin, ymax = math.huge, -math.huge, math.huge, -math.huge
  for _, v in ipairs(xs) do xmin, xmax = math.min(xmin, v), math.max(xmax, v) end
  for _, v in ipairs(ys) do ymin, ymax = math.min(ymin, v), math.max(ymax, v) end
  local sx, x0, x1 = scale(xmin, xmax, opts.xlog, L, W - R)
  local sy, y0, y1 = scale(ymin, ymax, opts.ylog, H - B, T)
  for _, v in ipairs(axis_ticks(x0, x1, opts.xlog)) do
    local px = sx(v)
    out[#out + 1] = string.format('<line x1="%s" y1="%d" x2="%s" y2="%d" class="grid"/><text x="%s" y="%d" class="tx">%s</text>',
      num(px), T, num(px), H - B, num(px), H - B + 14, esc(tick_text(v)))
  end
  for _, v in ipairs(axis_ticks(y0, y1, opts.ylog)) do
    local py = sy(v)
    out[#out + 1] = string.format('<line x1="%d" y1="%s" x2="%d" y2="%s" class="grid"/><text x="%d" y="%s" class="ty">%s</text>',
      L, num(py), W - R, num(py), L - 4, num(py + 4), esc(tick_text(v)))
  end
  out[#out + 1] = string.format('<text x="%d" y="%d" class="xl">%s%s</text>', math.floor((L + W - R) / 2), H - 8,
    esc(opts.xlabel), opts.xlog and " (log)" or "")
  out[#out + 1] = string.format('<text x="14" y="%d" class="yl" transform="rotate(-90 14 %d)">%s%s</text>',
    math.floor((T + H - B) / 2), math.floor((T + H - B) / 2), esc(opts.ylabel), opts.ylog and " (log)" or "")
  local lx = L + 20 + 8 * #tostring(opts.title)
  -- line labels top to bottom, each at least 12 px below the one above it
  table.sort(hl, function(a, b) return sy(a.y) < sy(b.y) end)
  local last_label = -math.huge
  for _, h in ipairs(hl) do
    local py = sy(h.y)
    local ty = math.max(py + 4, last_label + 12)
    last_label = ty
    out[#out + 1] = string.format('<line x1="%d" y1="%s" x2="%d" y2="%s" class="hl%s"/>', L, num(py), W - R, num(py),
      h.dash and " dash" or "")
    out[#out + 1] = string.format('<text x="%d" y="%s" class="hlt">%s</text>', W - R + 4, num(ty), esc(h.label))
  end
  for _, s in ipairs(series) do
    local d = {}
    for k, p in ipairs(s.points) do
      local px, py = sx(p[1]), sy(p[2])
      if k == 1 then d[#d + 1] = "M" .. num(px) .. " " .. num(py)
      elseif s.step then d[#d + 1] = "H" .. num(px) .. " V" .. num(py)
      else d[#d + 1] = "L" .. num(px) .. " " .. num(py) end
    end
    out[#out + 1] = string.format('<path d="%s" class="series" stroke="%s"/>', table.concat(d, " "), s.color)
    for _, p in ipairs(s.points) do
      out[#out + 1] = string.format('<circle cx="%s" cy="%s" r="2.5" fill="%s"/>', num(sx(p[1])), num(sy(p[2])), s.color)
    end
    -- the legend sits in the title row, after the title
    out[#out + 1] = string.format('<rect x="%d" y="9" width="10" height="3" fill="%s"/><text x="%d" y="16" class="lg">%s</text>',
      lx, s.color, lx + 14, esc(s.name))
    lx = lx + 30 + 7 * #tostring(s.name)
  end
  local notes = {}
  for _, m in ipairs(opts.missing or {}) do notes[#notes + 1] = m end
  if dropped > 0 then notes[#notes + 1] = dropped .. " point(s) at 0 not shown on the log axis" end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n"), notes
end

-- Horizontal 100% stacked bars: rows = { {label, parts = { {name, value} }} }.
-- Each segment carries its count; the legend names every verdict once.
function M.stacked_bars(opts)
  local W = opts.width or 900
  local L, R, row_h = 300, 20, 22
  local names, order = {}, {}
  for _, r in ipairs(opts.rows) do
    for _, p in ipairs(r.parts) do
      if not names[p[1]] then names[p[1]] = true order[#order + 1] = p[1] end
    end
  end
  local H = 30 + row_h * #opts.rows + 26
  local out = { string.format('<svg class="bars" width="%d" height="%d" viewBox="0 0 %d %d" role="img">',
    W, H, W, H) }
  out[#out + 1] = string.format('<title>%s</title><text x="4" y="16" class="ct">%s</text>', esc(opts.title), esc(opts.title))
  for i, r in ipairs(opts.rows) do
    local y = 26 + (i - 1) * row_h
    local total = 0
    for _, p in ipairs(r.parts) do total = total + p[2] end
    out[#out + 1] = string.format('<text x="%d" y="%d" class="bl">%s</text>', L - 6, y + 14, esc(r.label))
    local x = L
    for _, p in ipairs(r.parts) do
      local w = total > 0 and (W - L - R) * p[2] / total or 0
      out[#out + 1] = string.format('<rect x="%s" y="%d" width="%s" height="%d" fill="%s"><title>%s: %d</title></rect>',
        num(x), y, num(w), row_h - 4, M.verdict_color(p[1]), esc(p[1]), p[2])
      if w > 18 then
        out[#out + 1] = string.format('<text x="%s" y="%d" class="bv">%d</text>', num(x + w / 2), y + 13, p[2])
      end
      x = x + w
    end
  end
  local lx, ly = L, 26 + row_h * #opts.rows + 14
  for _, name in ipairs(order) do
    out[#out + 1] = string.format('<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" class="lg">%s</text>',
      lx, ly - 9, M.verdict_color(name), lx + 14, ly, esc(name))
    lx = lx + 24 + 7 * #name
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n")
end

return M
