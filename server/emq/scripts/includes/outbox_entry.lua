-- outbox_entry: one cross-queue signal, encoded to deliver on its own.
-- kind is 'completed' (value = the result) or 'failed' (value = the error);
-- the child's queue is read back from this queue's base, emq:{q}:. The Pump
-- decodes exactly these seven fields (server/emq/pump.py, decode_entry).
local function outbox_entry(kind, base, child_id, value, parent_id, parent_queue, policy)
  return cjson.encode({
    kind = kind, child = child_id, child_queue = string.match(base, '^emq:{(.*)}:$') or '',
    value = value, parent = parent_id, parent_queue = parent_queue, policy = policy,
  })
end
