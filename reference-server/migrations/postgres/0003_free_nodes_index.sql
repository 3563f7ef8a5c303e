-- The free nodes, in the order a create takes them. Without it, finding a free node walked the
-- primary key past every allocated node (`ORDER BY node_id` with `allocation_id IS NULL` as a
-- filter), so each create cost time in proportion to the nodes already allocated.
CREATE INDEX nodes_free ON nodes (node_id) WHERE allocation_id IS NULL;
