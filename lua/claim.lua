-- claim(KEYS[1] = claim key; ARGV: owner, lease_ms)
-- Replies (array of bulk strings):
--   {"ACQUIRED", token}          new key, or re-entrant claim by the same owner
--   {"TAKEN_OVER", token}        PROCESSING past its lease: ours now, higher token
--   {"DUPLICATE", result}        COMPLETED earlier
--   {"DEAD_LETTERED", reason}    DEAD_LETTERED earlier
--   {"CONFLICT", remaining_ms}   PROCESSING by another owner whose lease is live
-- Times come from the Redis server only: workers' clocks may disagree.
local key = KEYS[1]
local owner = ARGV[1]
local lease_ms = tonumber(ARGV[2])
if not lease_ms or lease_ms <= 0 then
    return redis.error_reply('ERR claim.lua: lease_ms must be a positive number')
end

local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)

-- Numbers are formatted by hand: tostring() would print 1.7e+15, and microseconds
-- (< 2^53) are exact in Lua's doubles.
local function str(n) return string.format('%.0f', n) end

-- A PROCESSING key outlives its lease (takeover uses lease_until, not the TTL) so
-- the token survives for the next owner; the TTL only collects dead workers' keys.
local function hold(token)
    redis.call('HSET', key, 'state', 'PROCESSING', 'owner', owner, 'token', token,
               'lease_until', str(now_ms + lease_ms))
    redis.call('PEXPIRE', key, str(math.max(4 * lease_ms, 60000)))
end

local rec = redis.call('HMGET', key, 'state', 'owner', 'token', 'lease_until', 'result')
local state = rec[1]

if state == 'COMPLETED' or state == 'DEAD_LETTERED' then
    return {state == 'COMPLETED' and 'DUPLICATE' or 'DEAD_LETTERED', rec[5] or ''}
end

-- Tokens must only grow, even across a FLUSHALL that forgot the previous one:
-- server time in microseconds is above any token handed out before.
local function next_token(previous)
    return str(math.max((tonumber(previous) or 0) + 1, now_us))
end

if not state then
    local token = next_token(false)
    hold(token)
    return {'ACQUIRED', token}
end

if state ~= 'PROCESSING' then
    return redis.error_reply('ERR claim.lua: unknown state ' .. tostring(state))
end

if rec[2] == owner then
    -- Re-entrant: a retried batch of ours (its reply was lost) gets the same token.
    hold(rec[3])
    return {'ACQUIRED', rec[3]}
end

local lease_until = tonumber(rec[4]) or 0
if lease_until > now_ms then
    return {'CONFLICT', str(lease_until - now_ms)}
end

local token = next_token(rec[3])
hold(token)
return {'TAKEN_OVER', token}
