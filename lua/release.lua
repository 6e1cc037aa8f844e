-- release(KEYS[1] = claim key; ARGV: owner, token)
-- Reply (bulk string): "OK" (claim deleted) | "LOST" (not ours any more, or no key).
-- After a failure or a revoke, so the next try need not wait for the lease to pass.
local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token')
if rec[1] ~= 'PROCESSING' or rec[2] ~= ARGV[1] or rec[3] ~= ARGV[2] then
    return 'LOST'
end
redis.call('DEL', KEYS[1])
return 'OK'
