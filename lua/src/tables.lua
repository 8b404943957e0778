-- gopher-lua's table order on Lua 5.1 (see tables.rs): insertion-ordered `next` and `pairs`,
-- and Go's sort.Sort as `table.sort`. Runs once per state, before any script, with the
-- standard functions still in place.
local break_pattern_offsets = ...
local rawget, rawset, raw_next, setmetatable, type, error, select =
  rawget, rawset, next, setmetatable, type, error, select
local floor = math.floor

-- Positive integer keys below this are gopher-lua's array part: they come first, ascending.
local MAX_ARRAY = 67108864
local function array_key(k)
  return type(k) == "number" and k >= 1 and k < MAX_ARRAY and k % 1 == 0
end

-- For each table, the other keys scripts inserted, in order: r[1..r[COUNT]] are the keys and
-- r[key] is each one's position (array keys, which could collide with positions, are never
-- recorded). COUNT is a key no script can hold.
local COUNT = {}
local inserted = setmetatable({}, { __mode = "k" })

local function record(t, k)
  if array_key(k) then
    return
  end
  local r = inserted[t]
  if r == nil then
    r = { [COUNT] = 0 }
    inserted[t] = r
  end
  if r[k] == nil then
    local n = r[COUNT] + 1
    r[COUNT] = n
    r[n] = k
    r[k] = n
  end
end

local tracked = {}
-- Only a key a table lacks reaches __newindex: exactly the insertions.
tracked.__newindex = function(t, k, v)
  if k == nil then
    error("table index is nil", 2)
  elseif k ~= k then
    error("table index is NaN", 2)
  end
  rawset(t, k, v)
  if v ~= nil then
    record(t, k)
  end
end

-- The keys of the `[key] = value` fields of the constructors being built, innermost last: a
-- constructor's keys are evaluated, in order, before it is complete.
local DYNAMIC = {}
local pending, npending = {}, 0

local function key(k)
  npending = npending + 1
  pending[npending] = k
  return k
end

-- A constructed table, with its keyed fields in source order (names, or DYNAMIC for the next
-- pending key): the fields were set before the table could be tracked.
local function new_table(t, ...)
  local n = select("#", ...)
  if n > 0 then
    local dynamic = 0
    for i = 1, n do
      if select(i, ...) == DYNAMIC then
        dynamic = dynamic + 1
      end
    end
    local base = npending - dynamic
    local d = base
    for i = 1, n do
      local k = select(i, ...)
      if k == DYNAMIC then
        d = d + 1
        k = pending[d]
      end
      if k ~= nil and k == k and rawget(t, k) ~= nil then
        record(t, k)
      end
    end
    for i = base + 1, npending do
      pending[i] = nil
    end
    npending = base
  end
  return setmetatable(t, tracked)
end

local function reset()
  pending, npending = {}, 0
end

local function argument(n, name, expected, ...)
  local v = select(n, ...)
  local got = select("#", ...) < n and "no value" or type(v)
  error("bad argument #" .. n .. " to '" .. name .. "' (" .. expected .. " expected, got " .. got .. ")", 3)
end

-- The recorded keys after position p that are still set.
local function after(t, r, p)
  for i = p + 1, r[COUNT] do
    local k = r[i]
    local v = rawget(t, k)
    if v ~= nil then
      return k, v
    end
  end
  return nil
end

-- gopher-lua's LTable.Next: array keys ascending, then the keys the table came with (a
-- converted object's, in no set order), then those scripts inserted, in insertion order.
local function ordered_next(...)
  local t, k = ...
  if type(t) ~= "table" then
    argument(1, "next", "table", ...)
  end
  local r = inserted[t]
  if k == nil or array_key(k) then
    local i = (k or 0) + 1
    local v = rawget(t, i)
    if v ~= nil then
      return i, v
    end
    -- A hole or the end of the sequence: the smallest array key beyond it, if any.
    local first
    for key in raw_next, t do
      if array_key(key) and key > i and (first == nil or key < first) then
        first = key
      end
    end
    if first ~= nil then
      return first, rawget(t, first)
    end
    k = nil
  elseif r ~= nil and r[k] ~= nil then
    return after(t, r, r[k])
  end
  local key, v = raw_next(t, k)
  while key ~= nil do
    if not array_key(key) and (r == nil or r[key] == nil) then
      return key, v
    end
    key, v = raw_next(t, key)
  end
  if r ~= nil then
    return after(t, r, 0)
  end
  return nil
end

local function ordered_pairs(...)
  local t = ...
  if type(t) ~= "table" then
    argument(1, "pairs", "table", ...)
  end
  return ordered_next, t, nil
end

-- Go's sort.Sort (pdqsort, sort/zsortinterface.go) over t[1..n], with 0-based positions as
-- in Go; less(i, j) is the script's comparison, true for any value but false and nil.
local function go_sort(t, n, lt)
  local function less(i, j)
    return lt(rawget(t, i + 1), rawget(t, j + 1)) and true or false
  end
  local function swap(i, j)
    local a, b = rawget(t, i + 1), rawget(t, j + 1)
    rawset(t, i + 1, b)
    rawset(t, j + 1, a)
  end
  local function bits_len(x)
    local b = 0
    while x > 0 do
      b = b + 1
      x = floor(x / 2)
    end
    return b
  end

  local function insertion_sort(a, b)
    for i = a + 1, b - 1 do
      local j = i
      while j > a and less(j, j - 1) do
        swap(j, j - 1)
        j = j - 1
      end
    end
  end

  local function sift_down(lo, hi, first)
    local root = lo
    while true do
      local child = 2 * root + 1
      if child >= hi then
        return
      end
      if child + 1 < hi and less(first + child, first + child + 1) then
        child = child + 1
      end
      if not less(first + root, first + child) then
        return
      end
      swap(first + root, first + child)
      root = child
    end
  end

  local function heap_sort(a, b)
    local first, lo, hi = a, 0, b - a
    for i = floor((hi - 1) / 2), 0, -1 do
      sift_down(i, hi, first)
    end
    for i = hi - 1, 0, -1 do
      swap(first, first + i)
      sift_down(lo, i, first)
    end
  end

  local function partition(a, b, pivot)
    swap(a, pivot)
    local i, j = a + 1, b - 1
    while i <= j and less(i, a) do
      i = i + 1
    end
    while i <= j and not less(j, a) do
      j = j - 1
    end
    if i > j then
      swap(j, a)
      return j, true
    end
    swap(i, j)
    i, j = i + 1, j - 1
    while true do
      while i <= j and less(i, a) do
        i = i + 1
      end
      while i <= j and not less(j, a) do
        j = j - 1
      end
      if i > j then
        break
      end
      swap(i, j)
      i, j = i + 1, j - 1
    end
    swap(j, a)
    return j, false
  end

  local function partition_equal(a, b, pivot)
    swap(a, pivot)
    local i, j = a + 1, b - 1
    while true do
      while i <= j and not less(a, i) do
        i = i + 1
      end
      while i <= j and less(a, j) do
        j = j - 1
      end
      if i > j then
        break
      end
      swap(i, j)
      i, j = i + 1, j - 1
    end
    return i
  end

  local function partial_insertion_sort(a, b)
    local MAX_STEPS, SHORTEST_SHIFTING = 5, 50
    local i = a + 1
    for _ = 1, MAX_STEPS do
      while i < b and not less(i, i - 1) do
        i = i + 1
      end
      if i == b then
        return true
      end
      if b - a < SHORTEST_SHIFTING then
        return false
      end
      swap(i, i - 1)
      -- Go shifts down to position 1, not to a.
      if i - a >= 2 then
        for j = i - 1, 1, -1 do
          if not less(j, j - 1) then
            break
          end
          swap(j, j - 1)
        end
      end
      if b - i >= 2 then
        for j = i + 1, b - 1 do
          if not less(j, j - 1) then
            break
          end
          swap(j, j - 1)
        end
      end
    end
    return false
  end

  local function break_patterns(a, b)
    local length = b - a
    if length >= 8 then
      local offsets = { break_pattern_offsets(length) }
      local idx = a + floor(length / 4) * 2 - 1
      for o = 1, 3 do
        swap(idx, a + offsets[o])
        idx = idx + 1
      end
    end
  end

  local UNKNOWN, INCREASING, DECREASING = 0, 1, 2

  local function choose_pivot(a, b)
    local SHORTEST_NINTHER, MAX_SWAPS = 50, 4 * 3
    local l = b - a
    local swaps = 0
    local i, j, k = a + floor(l / 4) * 1, a + floor(l / 4) * 2, a + floor(l / 4) * 3
    local function order2(x, y)
      if less(y, x) then
        swaps = swaps + 1
        return y, x
      end
      return x, y
    end
    local function median(x, y, z)
      x, y = order2(x, y)
      y, z = order2(y, z)
      x, y = order2(x, y)
      return y
    end
    local function median_adjacent(x)
      return median(x - 1, x, x + 1)
    end
    if l >= 8 then
      if l >= SHORTEST_NINTHER then
        i = median_adjacent(i)
        j = median_adjacent(j)
        k = median_adjacent(k)
      end
      j = median(i, j, k)
    end
    if swaps == 0 then
      return j, INCREASING
    elseif swaps == MAX_SWAPS then
      return j, DECREASING
    end
    return j, UNKNOWN
  end

  local function reverse_range(a, b)
    local i, j = a, b - 1
    while i < j do
      swap(i, j)
      i, j = i + 1, j - 1
    end
  end

  local function pdqsort(a, b, limit)
    local MAX_INSERTION = 12
    local was_balanced, was_partitioned = true, true
    while true do
      local length = b - a
      if length <= MAX_INSERTION then
        insertion_sort(a, b)
        return
      end
      if limit == 0 then
        heap_sort(a, b)
        return
      end
      if not was_balanced then
        break_patterns(a, b)
        limit = limit - 1
      end
      local pivot, hint = choose_pivot(a, b)
      if hint == DECREASING then
        reverse_range(a, b)
        pivot = (b - 1) - (pivot - a)
        hint = INCREASING
      end
      local skip = false
      if was_balanced and was_partitioned and hint == INCREASING then
        if partial_insertion_sort(a, b) then
          return
        end
      end
      if a > 0 and not less(a - 1, pivot) then
        a = partition_equal(a, b, pivot)
        skip = true
      end
      if not skip then
        local mid, already = partition(a, b, pivot)
        was_partitioned = already
        local left, right = mid - a, b - mid
        local threshold = floor(length / 8)
        if left < right then
          was_balanced = left >= threshold
          pdqsort(a, mid, limit)
          a = mid + 1
        else
          was_balanced = right >= threshold
          pdqsort(mid + 1, b, limit)
          b = mid
        end
      end
    end
  end

  if n > 1 then
    pdqsort(0, n, bits_len(n))
  end
end

local function lt(a, b)
  return a < b
end

local function sort(...)
  local t, comp = ...
  if type(t) ~= "table" then
    argument(1, "sort", "table", ...)
  end
  if comp ~= nil and type(comp) ~= "function" then
    argument(2, "sort", "function", ...)
  end
  go_sort(t, #t, comp or lt)
end

return {
  tracked = tracked,
  new_table = new_table,
  key = key,
  dynamic = DYNAMIC,
  reset = reset,
  next = ordered_next,
  pairs = ordered_pairs,
  sort = sort,
}
