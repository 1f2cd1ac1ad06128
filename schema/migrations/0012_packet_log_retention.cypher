// The packet log is bounded per namespace (graph/recall/packet_log.py `trim`): each write finds the
// namespace's oldest and expired packets through this index instead of scanning every packet.
CREATE INDEX packet_logged_at IF NOT EXISTS FOR (p:PacketLog) ON (p.namespace, p.logged_at)
