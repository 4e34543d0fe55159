-- kind_refusal: the kind law; an id that is not JOB-prefixed names another kind
-- of record. Returns the EMQKIND error reply to give back, or nil for a job id.
local function kind_refusal(id)
  if string.sub(id, 1, 3) ~= 'JOB' then
    return redis.error_reply('EMQKIND job id must be JOB-namespaced')
  end
  return nil
end
