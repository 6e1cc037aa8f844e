-- claim(KEYS[1..N] = claim keys; ARGV: owner, lease_ms)
-- Reply: an array with one entry per key, in KEYS order, each an array of two
-- bulk strings (three for DUPLICATE and DEAD_LETTERED):
--   {"ACQUIRED", token}          new key, or re-entrant claim by the same owner
--   {"TAKEN_OVER", token}        PROCESSING past its lease: ours now, higher token
--   {"DUPLICATE", result, fp}      COMPLETED earlier
--   {"DEAD_LETTERED", reason, fp}  DEAD_LETTERED earlier
--   (fp: the fingerprint complete.lua stored, '' if none: core/record_fingerprint.hpp)
--   {"CONFLICT", remaining_ms}   PROCESSING by another owner whose lease is live
-- or an error reply in that key's place (not a hash, unknown state): that key only
-- failed, the other keys were still claimed. A bad argument fails the whole call
-- before any key is touched.
-- One call takes many keys: on Redis Cluster they must share a slot (the router
-- sends one call per slot; redis/claim_store.hpp names the keys so that they do).
-- Times come from the Redis server only: workers' clocks may disagree.
if #ARGV ~= 2 then
    return redis.error_reply('ERR claim.lua: expected ARGV owner, lease_ms')
end
local owner = ARGV[1]
local lease_ms = tonumber(ARGV[2])
if not lease_ms or lease_ms <= 0 then
    return redis.error_reply('ERR claim.lua: lease_ms must be a positive number')
end

-- One clock reading for every key of the call: they are claimed at the same instant.
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)

-- Numbers are formatted by hand: tostring() would print 1.7e+15, and microseconds
-- (< 2^53) are exact in Lua's doubles.
local function str(n) return string.format('%.0f', n) end

local lease_until = str(now_ms + lease_ms)
local gc_ttl = str(math.max(4 * lease_ms, 60000))

-- A PROCESSING key outlives its lease (takeover uses lease_until, not the TTL) so
-- the token survives for the next owner; the TTL only collects dead workers' keys.
local function hold(key, token)
    redis.call('HSET', key, 'state', 'PROCESSING', 'owner', owner, 'token', token,
               'lease_until', lease_until)
    redis.call('PEXPIRE', key, gc_ttl)
end

-- Tokens must only grow, even across a FLUSHALL that forgot the previous one:
-- server time in microseconds is above any token handed out before.
local function next_token(previous)
    return str(math.max((tonumber(previous) or 0) + 1, now_us))
end

-- One key, exactly as a call with that key alone would answer it. Keys are
-- handled in order, so a key given twice sees its first answer (re-entrant).
local function claim(key)
    -- pcall: a key that is not a hash fails alone instead of aborting the call.
    local rec = redis.pcall('HMGET', key, 'state', 'owner', 'token', 'lease_until', 'result', 'fp')
    if rec.err then return rec end
    local state = rec[1]

    if state == 'COMPLETED' or state == 'DEAD_LETTERED' then
        return {state == 'COMPLETED' and 'DUPLICATE' or 'DEAD_LETTERED', rec[5] or '', rec[6] or ''}
    end

    if not state then
        local token = next_token(false)
        hold(key, token)
        return {'ACQUIRED', token}
    end

    if state ~= 'PROCESSING' then
        return redis.error_reply('ERR claim.lua: unknown state ' .. tostring(state))
    end

    if rec[2] == owner then
        -- Re-entrant: a retried batch of ours (its reply was lost) gets the same token.
        hold(key, rec[3])
        return {'ACQUIRED', rec[3]}
    end

    local until_ms = tonumber(rec[4]) or 0
    if until_ms > now_ms then
        return {'CONFLICT', str(until_ms - now_ms)}
    end

    local token = next_token(rec[3])
    hold(key, token)
    return {'TAKEN_OVER', token}
end

local replies = {}
for i, key in ipairs(KEYS) do
    replies[i] = claim(key)
end
return replies
