-- In-flight chunks in a table with rowids (issue 36). A WITHOUT ROWID
-- table keeps each row in its primary key's b-tree, where a cell holds at
-- most about a quarter of a page before it overflows, and a chunk of 16 KiB
-- is split and moved as that tree balances: appending one cost about 165 µs
-- of processor time, against about 95 µs here (storetest's
-- BenchmarkAppendEvents). Chunks are read by (session_id, seq) and in seq
-- order, through the primary key's index. The chunks in the database are
-- copied once, in this migration's transaction: after migration 0020's
-- moves, only in-flight ones; a database that still holds whole
-- recordings (upgraded from before 0020, not moved yet) copies them all,
-- and needs their size again on disk while it does.
CREATE TABLE session_events_rows (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    data       BLOB NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;
INSERT INTO session_events_rows (session_id, seq, data)
    SELECT session_id, seq, data FROM session_events ORDER BY session_id, seq;
DROP TABLE session_events;
ALTER TABLE session_events_rows RENAME TO session_events;
