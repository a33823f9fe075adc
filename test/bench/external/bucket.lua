-- The Redis token bucket of make bench: one EVALSHA per check, KEYS[1] the
-- key, ARGV rate (tokens per second), capacity, count, and the least time
-- an idle key is kept (ms).  Returns {1, tokens left} or {0, tokens}.
-- Loaded by compare.js (node-redis) and memory.sh (redis-benchmark).
local rate = tonumber(ARGV[1])          -- tokens per second
local capacity = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local s = redis.call('HMGET', KEYS[1], 'v', 't')
local v = capacity
if s[1] then
  v = math.min(capacity, tonumber(s[1]) + math.max(0, now - tonumber(s[2])) * rate)
end
if v < count then
  return {0, tostring(v)}
end
v = v - count
redis.call('HSET', KEYS[1], 'v', string.format('%.17g', v), 't', string.format('%.17g', now))
local ttl = math.min(1e12, math.max(tonumber(ARGV[4]), math.ceil((capacity - v) / rate * 1000)))
redis.call('PEXPIRE', KEYS[1], string.format('%d', ttl))
return {1, tostring(v)}
