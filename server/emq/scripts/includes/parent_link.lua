-- parent_link: a row's link up its flow, appended to the HSET field list
-- `fields`: 'parent' with the parent's id, then 'parent_queue' when the parent
-- lives on another queue ('' when it shares this one: completion counts the
-- child directly; set, the Pump delivers to the other slot). No parent id
-- ('' for a tree's root) adds nothing. Returns `fields`.
local function parent_link(fields, parent_id, parent_queue)
  if parent_id ~= '' then
    table.insert(fields, 'parent')
    table.insert(fields, parent_id)
    if parent_queue ~= '' then
      table.insert(fields, 'parent_queue')
      table.insert(fields, parent_queue)
    end
  end
  return fields
end
