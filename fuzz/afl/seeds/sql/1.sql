SELECT s, count(*), sum(j), avg(d) FROM t WHERE i > 1 GROUP BY s HAVING count(*) > 0 ORDER BY 2 DESC LIMIT 3
