-- program_sqlite: built and queried under lithe; the driver checks every figure.
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT NOT NULL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, (x * 7) % 1000, printf('row-%06d', x) FROM c;
CREATE INDEX t_k ON t(k);
SELECT 'rows', count(*), sum(id), sum(k), min(v), max(v) FROM t;
SELECT 'k=3', count(*), sum(id) FROM t WHERE k = 3;
SELECT 'distinct', count(DISTINCT k) FROM t;
SELECT 'range', count(*), sum(id) FROM t WHERE k BETWEEN 100 AND 199;
EXPLAIN QUERY PLAN SELECT id FROM t WHERE k = 3;
UPDATE t SET v = v || '-u' WHERE id % 10 = 0;
DELETE FROM t WHERE id % 3 = 0;
SELECT 'after', count(*), sum(length(v)), sum(id) FROM t;
CREATE TABLE g AS SELECT k % 10 AS b, count(*) AS n, sum(id) AS s FROM t GROUP BY k % 10;
SELECT 'groups', count(*), sum(n), sum(s) FROM g;
VACUUM;
PRAGMA integrity_check;
