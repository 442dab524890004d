-- sqlite3 workload for bench/traces/sqlite.ltrace.xz: build an indexed table
-- in an in-memory database, then query, update and delete through the index.
PRAGMA cache_size = -16000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER, pad TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 420000)
INSERT INTO t(k, v, pad)
  SELECT printf('key-%08d', (i * 7919) % 1000003), i % 977, substr(hex(randomblob(40)), 1, 20 + i % 60) FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_v ON t(v, k);
SELECT count(*), sum(length(pad)) FROM t WHERE k BETWEEN 'key-00100000' AND 'key-00600000';
SELECT v, count(*), max(k) FROM t GROUP BY v ORDER BY 2 DESC LIMIT 5;
SELECT a.id, b.id FROM t a JOIN t b ON a.k = b.k AND a.id < b.id LIMIT 10;
UPDATE t SET pad = pad || 'x', v = v + 1 WHERE v % 5 = 0;
DELETE FROM t WHERE v % 7 = 3;
SELECT k, group_concat(v) FROM t WHERE v < 50 GROUP BY substr(k, 1, 9) LIMIT 5;
SELECT count(*) FROM t WHERE k LIKE 'key-0000%';
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 130000)
SELECT count(*) FROM c JOIN t ON t.k = printf('key-%08d', (c.i * 7919) % 1000003);
