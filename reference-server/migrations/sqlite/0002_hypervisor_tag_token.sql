-- At most one running hypervisor instance per tag: the boot call is "do or return the existing one"
-- (the tag is the boot_id, a client token). Before the index, older duplicates that no worker uses
-- are terminated (phantoms from a retry that reclaimed a record while its first attempt was booting).
UPDATE hypervisor_instances SET state = 'terminated'
WHERE state = 'running'
  AND instance_id NOT IN (SELECT instance_id FROM workers)
  AND tag IN (SELECT tag FROM hypervisor_instances WHERE state = 'running' GROUP BY tag HAVING COUNT(*) > 1);

CREATE UNIQUE INDEX hypervisor_instances_running_tag ON hypervisor_instances (tag) WHERE state = 'running';
